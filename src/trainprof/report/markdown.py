"""report.md: the experiment report, in the order a profiling assignment reads it:

Method → baseline profile (top-5 and roofline) → optimisations chosen and why → optimised
profile → speed-up per iteration → analysis and what could still be done. Every number is
read from a record; a part whose record is missing says which command produces it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from trainprof.recordtypes.analysis import Analysis, MultiRank, Rank
from trainprof.recordtypes.base import known, or_default
from trainprof.recordtypes.tune import Trial, Verify
from trainprof.report.loader import Bundle
from trainprof.report.units import clip, gib, ms, num, pct, pv, shapes, us

PHASES = (("data", "data_s"), ("h2d", "h2d_s"), ("forward", "forward_s"), ("backward", "backward_s"),
          ("optimizer", "optimizer_s"), ("other", "other_s"))


def _t(text: Any) -> str:
    """Record text in Markdown prose or a table cell: no raw HTML, no cell breaks, no emphasis."""
    s = "" if text is None else str(text)
    for ch in ("\\", "<", ">", "|", "*"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def _code(text: Any, n: int = 80) -> str:
    """A name as inline code (kernel names hold < > &, safe inside a code span)."""
    s = str(text).replace("`", "'").replace("|", "\\|").replace("\n", " ")
    return f"`{s if len(s) <= n else s[: n - 1] + '…'}`"


def _us(v: float | None) -> str:
    return us(v, ms_digits=2)


def _g(v: float | None) -> str:
    return "—" if v is None else f"{v:.3g}"


def _v(x: Any) -> Any:
    """A typed record's field, None where the file lacks it (UNSET)."""
    return or_default(x, None)


def _table(head: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    right = right if right is not None else set(range(1, len(head)))
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---:" if i in right else "---" for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


def _dims(d: Any) -> str:
    return clip(shapes(d), 48)


class _Md:
    def __init__(self, b: Bundle, out_dir: Path) -> None:
        self.b, self.out_dir, self.lines = b, out_dir, []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def image(self, names: tuple[str, ...], alt: str) -> None:
        for n in names:
            if n in self.b.images:
                rel = os.path.relpath(self.b.images[n], self.out_dir)
                self.add(f"![{alt}]({Path(rel).as_posix()})", "")
                return

    # -- sections ---------------------------------------------------------------------------
    def profiled_program(self, run: dict) -> None:
        """The method lines of a `trainprof profile` record: the user's program, not our workload."""
        import shlex

        m, c, s, p = run["model"], run["config"], run["summary"], run.get("profile") or {}
        wrapper = f" in `{_t(m['wrapper'])}`" if m.get("wrapper") else ""
        params = f", {m['params'] / 1e6:.2f} M parameters" if m.get("params") else ""
        accum = p.get("backward_passes_per_step") or 1
        self.add(f"* Program: `{_t(shlex.join(run['command']))}`, measured by `trainprof profile` (status "
                 f"{_t(run.get('status'))}, exit code {_t(run.get('exit_code'))}); model `{_t(m.get('class'))}`"
                 f"{wrapper}{params}.",
                 f"* Steps: one step = {_t(p.get('boundary'))}; {accum} backward pass{'es' if accum != 1 else ''} "
                 f"per step; {s['tokens_per_step']:,} {_t(p.get('batch_unit') or 'tokens')} per step; "
                 f"{_t(c.get('dtype'))} (from {_t(p.get('dtype_from'))}).",
                 f"* Window: {s['measured_steps']} steps measured after {_t(p.get('warmup_steps'))} warm-up steps "
                 f"(FLOPs counted with FlopCounterMode on step {_t(p.get('flops_step'))}); loss "
                 f"{num(s.get('loss_first'))} → {num(s.get('loss_last'))}.")

    def method(self) -> None:
        b, run = self.b, self.b.run
        self.add("## 1. Method", "", "### What was measured", "")
        if run and run.get("command"):
            self.profiled_program(run)
        elif run:
            m, c, s = run["model"], run["config"], run["summary"]
            self.add(f"* Workload: the reference GPT-2 model, preset `{_t(m.get('preset'))}` "
                     f"({m.get('params', 0) / 1e6:.2f} M parameters; {m.get('n_layer')} layers, d_model "
                     f"{m.get('d_model')}, {m.get('n_head')} heads, vocabulary {m.get('vocab_size')}), trained on "
                     f"`{_t(c.get('corpus') or c.get('data') or 'the default corpus')}`.",
                     f"* Configuration: micro-batch {c.get('micro_batch')} × {c.get('seq_len')} tokens × "
                     f"{c.get('grad_accum', 1)} accumulation = {s['tokens_per_step']:,} tokens/step; {c.get('dtype')}; "
                     f"{c.get('optimizer')} AdamW; {c.get('attention')} attention; torch.compile "
                     f"{'on' if c.get('compile') else 'off'}; activation checkpointing "
                     f"{'on' if c.get('activation_checkpointing') else 'off'}.",
                     f"* Steps: {s['measured_steps']} measured after {s['warmup_steps']} warm-up steps; loss "
                     f"{num(s.get('loss_first'))} → {num(s.get('loss_last'))}, validation loss "
                     f"{num(s.get('val_loss'))}.")
        elif b.tune:
            c = b.tune.baseline.config
            self.add(f"* Workload: the reference GPT-2 model, preset `{_t(c.get('preset'))}`, micro-batch "
                     f"{c.get('micro_batch')} × {c.get('seq_len')} tokens, {c.get('dtype')}, {c.get('optimizer')} "
                     f"AdamW, {c.get('steps')} steps per trial ({c.get('warmup_steps')} warm-up left out).")
        if b.analysis and b.analysis.ranks:
            r = b.analysis.ranks[0]
            n = len(b.analysis.ranks)
            more = f" and {n - 1} more rank{'s' if n > 2 else ''}" if n > 1 else ""
            self.add(f"* Trace: `{_t(r.file)}`{more}: "
                     f"{or_default(r.steps, 0)} profiler steps, {or_default(r.events, 0):,} events.")
        self.add("", "### How", "")
        if run:
            d, fl = run["device"], run.get("flops") or {}
            peak = (f"{d['peak_tflops']:.3g} TFLOP/s dense {d['peak_dtype']} ({d['peak_source']}"
                    + (f", spec row `{d['spec_key']}`" if d.get("spec_key") else "") + ")"
                    if d.get("peak_tflops") is not None else "unknown (no MFU reported)")
            self.add(f"* Device: {_t(d['name'])} [{d['kind']}], peak {peak}"
                     + (f", memory bandwidth {d['peak_bandwidth_gbs']:.3g} GB/s" if d.get("peak_bandwidth_gbs") else "")
                     + f"; torch {_t((run.get('environment') or {}).get('torch'))}.",
                     "* Step time: wall time of each phase (data, host-to-device copy, forward, backward, "
                     "optimizer) between device synchronisations; means over the measured steps.",
                     f"* FLOPs: {_t(fl.get('method', 'counted per step'))}; attention convention: "
                     f"{_t(fl.get('attention_convention', '—'))}; analytic check "
                     f"{_t(fl.get('analytic_formula', '—'))}. "
                     "MFU = model FLOPs per second / peak; FLOPs, not MACs.")
        if b.analysis and b.analysis.ranks:
            h = b.analysis.ranks[0].roofline
            self.add("* Profile: a `torch.profiler` (Kineto) trace, analysed by `trainprof analyze` (time "
                     "breakdown, idle causes, top operators and kernels).",
                     "* Roofline (Williams et al. 2009): FLOPs and bytes of each top operator from its recorded "
                     f"input shapes (minimum traffic); roofs {_g(_v(h.peak_tflops))} TFLOP/s {_v(h.dtype)} and "
                     f"{_g(_v(h.peak_bandwidth_gbs))} GB/s ({_t(_v(h.source))}).")
            ncu = b.analysis.ncu or None
            if b.study and b.study.get("ncu") and not ncu:
                from trainprof.report import study_md

                study_md.ncu(self.add, b.study)
            elif ncu:
                self.add(f"* Nsight Compute: measured FLOPs and DRAM bytes of {ncu.get('kernels')} "
                         f"kernels from `{_t(ncu.get('file'))}`.")
            else:
                self.add("* Nsight Compute was not used here; `trainprof ncu-command TRACE` prints the command "
                         "that measures the top kernels and `trainprof analyze --ncu CSV` places them on the roofline.")
        self.add("")

    def profile(self, a: Analysis | None, what: str, image: bool) -> bool:
        if not a or not a.ranks:
            return False
        r = a.ranks[0]
        run = self.b.run if what == "baseline" else None
        if run:
            s = run["summary"]
            self.add(*_table(["step time", "tokens/s", "model TFLOPS", "MFU", "peak memory"],
                             [[ms(s["step_time_s"]), f"{s['tokens_per_s']:,.0f}", num(s.get("tflops")),
                               pct(s.get("mfu")), gib(s.get("peak_memory_bytes"))]]))
            noisy = _outlier_phases(run)
            self.add(*_table([p for p, _ in PHASES] + ["step"],
                             [[f"{ms(s.get(k))} ({pct(s.get(k) / s['step_time_s'] if s['step_time_s'] else None)})"
                               + (f"; median {ms(noisy[k].median_s)} ({noisy[k].median_share_pct:.1f}%)\\*"
                                  if k in noisy else "")
                               for _, k in PHASES] + [ms(s["step_time_s"])]]))
            if noisy:
                self.add("\\* a few slow steps drive this phase's mean; its median is the typical step "
                         "(docs/rules.md, noise).", "")
            if run.get("system"):
                from trainprof.report.system_terminal import energy_lines

                self.add("Energy: " + "; ".join(f"{label} {text}" for label, text in energy_lines(run["system"]))
                         + ".", "")
        if r.has_gpu and r.temporal_breakdown.span_us:
            tb = r.temporal_breakdown
            self.add(f"Device timeline: compute {pv(tb.compute_pct)}, communication "
                     f"{pv(tb.communication_pct)}, memcpy {pv(tb.memcpy_pct)}, idle "
                     f"{pv(tb.idle_pct)}; median step {_us(_v(r.step_time_us))}.", "")
        metric = (_v(r.top_ops[0].metric) if r.top_ops else None) or "time"
        self.add(f"**Top-5 operators** (by {'self CPU' if metric == 'self_cpu' else 'GPU'} time, "
                 f"{or_default(r.steps, 0)} profiler steps):", "")
        self.add(*_table(["#", "operator", "calls", "total", "mean", "share"],
                         [[str(i), _code(o.name), f"{or_default(o.calls, 0):,}", _us(_v(o.total_us)),
                           _us(_v(o.mean_us)), pv(o.share_pct)] for i, o in enumerate(r.top_ops[:5], 1)],
                         right={0, 2, 3, 4, 5}))
        if r.top_kernels:
            self.add("**Top-5 kernels:**", "")
            self.add(*_table(["#", "kernel", "class", "count", "total", "share"],
                             [[str(i), _code(k.name), _t(_v(k.kind)), f"{or_default(k.count, 0):,}",
                               _us(_v(k.total_us)), pv(k.share_pct)]
                              for i, k in enumerate(r.top_kernels[:5], 1)], right={0, 3, 4, 5}))
        pts = r.roofline_points or []
        if pts:
            self.add("**Roofline of the top-5 operators** (by shape):", "")
            head = ["#", "operator", "shapes", "time", "FLOP/B", "achieved TFLOP/s", "roof TFLOP/s", "of roof", "bound"]
            self.add(*_table(head,
                             [[str(i), _code(p["name"], 48), _t(_dims(p.get("input_dims"))),
                               _us(p.get("device_time_us")), _g(p.get("intensity")), _g(p.get("achieved_tflops")),
                               _g(p.get("attainable_tflops")),
                               pv(p.get("roofline_pct"), 0), _t(p.get("bound") or "?")]
                              for i, p in enumerate(pts[:5], 1)], right={0, 3, 4, 5, 6, 7}))
            for i, p in enumerate(pts[:5], 1):
                if p.get("note"):  # estimates and points above the roof say why
                    self.add(f"* #{i} {_code(p['name'], 48)}: {_t(p['note'])}")
            if any(p.get("note") for p in pts[:5]):
                self.add("")
            if image:
                self.image(("roofline.png", "roofline_rank0.png"), "Roofline of the top operators")
            bounds = [p.get("bound") for p in pts[:5]]
            self.add(f"Of the top five, {bounds.count('compute')} are compute-bound, {bounds.count('memory')} "
                     f"memory-bound and {bounds.count('latency')} latency-bound"
                     + (" (far below both roofs: launch or per-call overhead dominates)." if 'latency' in bounds
                        else "."), "")
            if r.has_gpu and r.roofline.source == "measured on this machine":
                self.add("**Caveat:** these roofs were measured on the CPU that ran the analysis, not on the "
                         "trace's GPU (the trace does not name it); rerun `trainprof analyze --gpu-spec KEY` "
                         "(see `trainprof specs`) for meaningful roofline percentages.", "")
        else:
            self.add("No roofline: the trace carries no input shapes (profile with `record_shapes=True`).", "")
        self.critical_path(r)
        return True

    def collectives(self, multi: MultiRank | None) -> None:
        """The job's collectives matched across ranks (analysis/collectives_job.py)."""
        cj = multi.collectives if multi else None
        if not cj:
            return
        self.add("### Collectives across ranks", "",
                 f"{cj.matched} collectives matched on {cj.ranks} ranks by (process group, op, order); clocks "
                 "aligned on collective ends; busbw with nccl-tests' factors (docs/collectives.md).", "")
        self.add(*_table(["group", "op", "count", "bytes", "latency p50", "skew p50", "skew max", "busbw p50 (GB/s)",
                          "overlap with compute p50"],
                         [[_t(g.group), g.op, str(g.count), f"{g.bytes:,}" if g.bytes else "—",
                           _us(g.median_latency_us), _us(g.median_skew_us), _us(g.max_skew_us),
                           _g(g.median_busbw_gbs), _pct(_v(g.median_compute_overlap_pct))]
                          for g in cj.groups], right={2, 3, 4, 5, 6, 7, 8}))
        self.add(*_table(["rank", "waited", "others waited for it", "share of waits", "last to arrive"],
                         [[str(r.rank), _us(r.wait_us), _us(r.caused_wait_us),
                           f"{r.caused_share_pct:.0f}%", str(r.last_count)] for r in cj.per_rank]))

    def critical_path(self, r: Rank) -> None:
        cp, wi = r.critical_path or {}, r.whatif or {}
        if cp.get("steps"):
            self.add("**Critical path** (what set each step's time; docs/critical-path.md):", "")
            self.add(*_table(["step", "length", "share of the path by kind"],
                             [["—" if s["step"] < 0 else str(s["step"]), _us(s["length_us"]),
                               ", ".join(f"{k} {pv(v)}" for k, v in list(s["share_pct"].items())[:6])]
                              for s in cp["steps"]], right={0, 1}))
            top = (cp.get("trace") or {}).get("top_ops") or []
            if top:
                self.add("On the path over the whole trace: " + "; ".join(
                    f"{_code(o['name'], 48)} ({o['kind']}) {pv(o['share_pct'])}" for o in top[:5]) + ".", "")
        if wi.get("scenarios"):
            self.add("**What-if** (the dependency graph re-timed without each cause):", "")
            self.add(*_table(["edit", "measured", "projected", "speed-up", "gain"],
                             [[s["label"], _us(s["measured_step_us"]), _us(s["projected_step_us"]),
                               f"{s['speedup']:.3f}×" if s.get("speedup") else "—", pv(s["gain_pct"])]
                              for s in wi["scenarios"]], right={1, 2, 3, 4}))

    def optimisations(self) -> list[dict]:
        b = self.b
        self.add("## 3. Optimisations chosen and why", "")
        findings = _findings(b.analysis) or list((b.run or {}).get("findings") or [])
        if findings:
            self.add("The diagnosis rules flagged (ranked by estimated gain, an upper bound on the share of the "
                     "step a fix recovers):", "")
            for i, f in enumerate(findings, 1):
                self.add(f"{i}. **{_t(f.get('title'))}** ({f.get('severity')}, up to "
                         f"{pv(f.get('estimated_gain_pct'))} of step time, {f.get('confidence')} confidence). "
                         f"Evidence: {_t(f.get('evidence'))}. "
                         f"Fix: {_t(f.get('fix'))}.")
            self.add("")
        else:
            self.add("No diagnosis rule fired above its threshold.", "")
        if b.tune:
            t = b.tune
            self.add("`trainprof tune` tried each knob on the ladder one at a time, kept a knob only when it was "
                     "measurably faster than the best so far and passed the accuracy guard (loss trajectory and "
                     "validation loss within seed-to-seed noise), then verified the combination against the "
                     "baseline in alternating pairs.", "")
            rows = [["baseline", "", ms(t.baseline.step_time_s), "", "1.00", pct(t.baseline.mfu, 0),
                     "—", "", ""]]
            for r in t.trials:
                if r.skipped:
                    rows.append([_t(r.knob), _t(r.description), "—", "—", "—", "—", "—", "skipped",
                                 _t(r.reason)])
                    continue
                rows.append([_t(r.knob), _t(r.description), ms(r.step_time_s),
                             f"{r.step_gain:.2f}" if r.step_gain else "—",
                             f"{r.speedup:.2f}" if r.speedup else "—", pct(r.mfu, 0),
                             _accuracy(r),
                             "**kept**" if r.accepted else "no", _t(r.reason or "")])
            self.add(*_table(["knob", "what it does", "step", "× best so far", "× baseline", "MFU", "accuracy",
                              "kept", "why not"], rows, right={2, 3, 4, 5}))
            self.image(("tune.png",), "Tuning ladder")
        else:
            self.add("This folder holds no tuning result: `trainprof tune --out DIR` climbs the optimisation "
                     "ladder with an accuracy guard; run `trainprof report DIR` on its folder.", "")
        return findings

    def optimised(self) -> None:
        b = self.b
        self.add("## 4. Optimised profile", "")
        if b.study:
            from trainprof.report import study_md

            study_md.optimised_run(self.add, b.study, b.run, b.optimised_run)
        if self.profile(b.optimised, "optimised", image=False):
            return
        cmd = b.tune.best.command if b.tune and b.tune.best.knobs else None  # the baseline is not an optimised config
        if cmd:
            self.add("The best configuration has not been profiled in this folder. Produce its profile with:", "",
                     "```bash", f"{cmd} --profile --out runs/optimised", "```", "",
                     "then copy `runs/optimised/analysis.json` here as `analysis_optimised.json` (and, for the "
                     "per-operator change, `trainprof diff BASE/trace.json.gz runs/optimised/trace.json.gz --out "
                     "THIS_FOLDER`) and run `trainprof report` again.", "")
        else:
            self.add("No optimised profile here: apply the fixes above, profile again (`trainprof run --profile "
                     "--out runs/optimised` or `trainprof analyze TRACE --out runs/optimised`), copy its "
                     "`analysis.json` here as `analysis_optimised.json` and run `trainprof report` again.", "")

    def speedup(self) -> None:
        b = self.b
        self.add("## 5. Speed-up per iteration", "")
        said = False
        if b.tune:
            t, best = b.tune, b.tune.best
            v = best.verify or Verify()
            kept = [r for r in t.trials if r.accepted]
            rows = [["baseline", ms(t.baseline.step_time_s), f"{t.baseline.tokens_per_s:,.0f}", "1.00"]]
            if kept:
                last = kept[-1]
                rows.append([f"kept ({_t(', '.join(r.knob for r in kept))}), ladder trial",
                             ms(last.step_time_s), f"{last.tokens_per_s or 0:,.0f}",
                             f"{last.speedup:.2f}" if last.speedup else "—"])
            self.add(*_table(["configuration", "step time (median)", "tokens/s", "× baseline"], rows, right={1, 2, 3}))
            if best.unconfirmed:
                u = best.unconfirmed
                self.add(f"**No verified speed-up**: {_t(u.reason)} (range {v.speedup_min or 0:.2f}–"
                         f"{v.speedup_max or 0:.2f}×), so {_t(', '.join(u.knobs))} not kept and the "
                         "baseline stays the best configuration.", "")
            elif best.knobs and not v.speedup_median:
                self.add(f"Kept {_t(', '.join(best.knobs))} on single ladder trials; not verified in "
                         "alternating pairs (no verify trials were run).", "")
            elif v.speedup_median:
                self.add(f"**Verified speed-up: {v.speedup_median:.2f}×** the baseline's tokens/s per iteration "
                         f"(median of {len(v.pairs)} alternating best/baseline pairs, range "
                         f"{v.speedup_min or 0:.2f}–{v.speedup_max or 0:.2f}×).", "",
                         f"Reproduce: `{_t(best.command)}`", "")
            else:
                self.add("No knob was both faster and accurate: the baseline stays the best configuration.", "")
            said = True
        if b.study and b.study.get("iteration"):
            from trainprof.report import study_md

            study_md.iteration(self.add, b.study)
            said = True
        if b.diff and b.diff.step_time_us.base is not None:
            st = b.diff.step_time_us
            self.add(f"Profiled step time {_us(st.base)} → {_us(st.new)}"
                     + (f": **{st.speedup:.2f}×**" if st.speedup else "") + " (`trainprof diff`).", "")
            said = True
        if not said:
            self.add("No before/after measurement in this folder (`trainprof tune` verifies one; "
                     "`trainprof diff BASE NEW --out DIR` compares two traces).", "")

    def remaining(self, findings: list[dict]) -> None:
        b = self.b
        self.add("## 6. Analysis and what could still be done", "")
        after = _findings(b.optimised)
        if after:
            self.add("Still flagged in the optimised profile:", "")
            for f in after:
                self.add(f"* **{_t(f.get('title'))}** (up to {pv(f.get('estimated_gain_pct'))}): {_t(f.get('fix'))}")
            self.add("")
        elif findings:
            kept = set(b.tune.best.knobs if b.tune else [])
            self.add("Findings from the baseline that remain candidates"
                     + (f" (the ladder kept {', '.join(sorted(kept))})" if kept else "") + ":", "")
            for f in findings:
                self.add(f"* **{_t(f.get('title'))}** (up to {pv(f.get('estimated_gain_pct'))} of step time): "
                         f"{_t(f.get('fix'))}")
            self.add("")
        if b.tune:
            rejected = [r for r in b.tune.trials if not r.accepted and not r.skipped]
            if rejected:
                self.add("Knobs that did not help here (worth retrying on other hardware or sizes): "
                         + "; ".join(f"{_t(r.knob)}: {_t(r.reason)}" for r in rejected) + ".", "")
        m = b.memory
        if m:
            above = m.measured_above_baseline_bytes
            self.add(f"Memory: analytic peak {gib(m.analytic_peak_bytes)}, measured "
                     f"{gib(above if above is not None else m.measured_peak_bytes)}"
                     + (f"; the largest micro-batch that fits is {m.max_micro_batch}" if m.max_micro_batch
                        else "") + ".", "")
        e = b.ettr
        if e and e.ettr is not None:
            lost = ", ".join(f"{k.replace('_', ' ')} {v:.1f} s" for k, v in e.lost_s.items() if v)
            self.add(f"Effective training time ratio {pct(e.ettr)} ({num(e.productive_s, 1)} s productive "
                     f"of {num(e.wall_s, 1)} s wall" + (f"; lost: {lost}" if lost else "") + ").", "")
        if b.run and b.run["device"].get("peak_source") == "measured":
            self.add("On a CPU the peak is a measured matmul rate on this machine (no datasheet), so MFU there "
                     "is relative to what this machine reached, and timings on a shared machine are noisy.", "")
        if b.study:
            from trainprof.report import study_md

            study_md.problems(self.add, b.study, findings, b.tune)
        self.add("## References", "",
                 "1. S. Williams, A. Waterman, D. Patterson. Roofline: an insightful visual performance model for "
                 "multicore architectures. CACM 52(4), 2009.",
                 "2. A. Chowdhery et al. PaLM: Scaling Language Modeling with Pathways, 2022 (App. B: model FLOPs "
                 "utilisation).", "")


def _outlier_phases(run: dict) -> dict:
    """Phases of the run whose mean a few outlier steps drive (analysis/step_split.py)."""
    from trainprof.analysis.step_split import measured, phase_shares

    steps = measured(run.get("steps") or [], run["summary"].get("warmup_steps", 0))
    if len(steps) < 3:  # diagnose.rules.MIN_STEPS_FOR_MEDIAN
        return {}
    return {p.phase: p for p in phase_shares(steps) if p.outlier_driven}


def _findings(a: Analysis | None) -> list[dict]:
    """The first rank's and the job's findings as written (dicts), biggest gain first."""
    if not a or not a.ranks:
        return []
    out = msgspec.to_builtins(a.ranks[0].findings or [])
    out += msgspec.to_builtins(a.multi_rank.findings or []) if a.multi_rank else []
    return sorted(out, key=lambda f: -(f.get("estimated_gain_pct") or 0))


def render_markdown(b: Bundle, out_dir: Path | None = None) -> str:
    """`out_dir`: where report.md goes (images are linked relative to it)."""
    from trainprof.report.text import visible_bundle

    b = visible_bundle(b)  # trace-derived names: control characters shown, never sent
    md = _Md(b, Path(out_dir) if out_dir is not None else b.folder)
    run = b.run
    title = (f"{run['model'].get('preset') or run['model'].get('class')} on {run['device']['name']}" if run else b.name)
    if b.study:
        files = ", ".join(f"`{v}`" for v in (b.study.get("records") or {}).values())
        md.add(f"# Training performance study: {_t(title)}", "",
               f"Written by `trainprof study` (and `trainprof report`) from `study.json` and {files}.", "")
    else:
        md.add(f"# Training performance report: {_t(title)}", "",
               f"Written by `trainprof report` from {', '.join(f'`{f}`' for f in b.files)}.", "")
    md.method()
    bad = (b.analysis.unreadable or []) if b.analysis else []
    if bad:  # ranks the job's numbers leave out: say so before any of them
        md.add(f"**{len(bad)} unreadable trace(s), left out of everything below:**", "",
               *_table(["trace", "error"], [[_t(e.file), _t(e.error)] for e in bad], right=set()))
    if b.study:
        from trainprof.report import study_md

        study_md.stages(md.add, b.study)
    md.add("## 2. Baseline profile", "")
    if not md.profile(b.analysis, "baseline", image=True):
        if run:
            s = run["summary"]
            md.add(*_table(["step time", "tokens/s", "model TFLOPS", "MFU"],
                           [[ms(s["step_time_s"]), f"{s['tokens_per_s']:,.0f}", num(s.get("tflops")),
                             pct(s.get("mfu"))]]))
        md.add("No operator profile in this folder: `trainprof run --profile` (or `trainprof analyze TRACE --out "
               "DIR`) records the top operators and their roofline.", "")
    md.collectives(b.analysis.multi_rank or None if b.analysis else None)
    findings = md.optimisations()
    md.optimised()
    md.speedup()
    md.remaining(findings)
    return "\n".join(md.lines).rstrip() + "\n"


def _accuracy(r: Trial) -> str:
    """The guard's verdict with its evidence: mean |Δloss| vs the baseline and Δ validation loss."""
    if not r.ok:
        return "—"
    verdict = "ok" if r.accuracy_ok else "failed"
    if not known(r.loss_deviation):
        return verdict  # tune.json from before the evidence was recorded
    val = f", Δval {r.val_delta:+.3f}" if known(r.val_delta) else ""
    return f"{verdict} (\\|Δloss\\| {r.loss_deviation:.3f}{val})"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}%"
