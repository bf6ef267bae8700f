"""report.md: the experiment report, in the order a profiling assignment reads it:

Method → baseline profile (top-5 and roofline) → optimisations chosen and why → optimised
profile → speed-up per iteration → analysis and what could still be done. Every number is
read from a record; a part whose record is missing says which command produces it.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from trainprof.analysis.graph.projection import rank_key
from trainprof.recordtypes.analysis import Analysis, MultiRank, Rank
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.tune import Verify
from trainprof.report.figures import LABELS, key, show, steps_shown, temporal_note
from trainprof.report.loader import Bundle
from trainprof.report.md_cells import md_codes, md_table, md_text, md_us, or_none
from trainprof.report.units import ms, peak_provenance

PHASES = (("data", "data_s"), ("h2d", "h2d_s"), ("forward", "forward_s"), ("backward", "backward_s"),
          ("optimizer", "optimizer_s"), ("other", "other_s"))


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
        from trainprof.controls import shell_join

        m, c, s, p = run["model"], run["config"], run["summary"], run.get("profile") or {}
        wrapper = f" in `{md_text(m['wrapper'])}`" if m.get("wrapper") else ""
        params = f", {m['params'] / 1e6:.2f} M parameters" if m.get("params") else ""
        accum = p.get("backward_passes_per_step") or 1
        self.add(f"* Program: `{md_text(shell_join(run['command']))}`, measured by `trainprof profile` (status "
                 f"{md_text(run.get('status'))}, exit code {md_text(run.get('exit_code'))}); model `{md_text(m.get('class'))}`"
                 f"{wrapper}{params}.",
                 f"* Steps: one step = {md_text(p.get('boundary'))}; {accum} backward pass{'es' if accum != 1 else ''} "
                 f"per step; {s['tokens_per_step']:,} {md_text(p.get('batch_unit') or 'tokens')} per step; "
                 f"{md_text(c.get('dtype'))} (from {md_text(p.get('dtype_from'))}).",
                 f"* Window: {s['measured_steps']} steps measured after {md_text(p.get('warmup_steps'))} warm-up steps "
                 f"(FLOPs counted with FlopCounterMode on step {md_text(p.get('flops_step'))}); loss "
                 f"{show(s.get('loss_first'), 'num3', 'run.summary.loss_first')} → "
                 f"{show(s.get('loss_last'), 'num3', 'run.summary.loss_last')}.")

    def method(self) -> None:
        b, run = self.b, self.b.run
        self.add("## 1. Method", "", "### What was measured", "")
        if run and run.get("command"):
            self.profiled_program(run)
        elif run:
            m, c, s = run["model"], run["config"], run["summary"]
            self.add(f"* Workload: the reference GPT-2 model, preset `{md_text(m.get('preset'))}` "
                     f"({m.get('params', 0) / 1e6:.2f} M parameters; {m.get('n_layer')} layers, d_model "
                     f"{m.get('d_model')}, {m.get('n_head')} heads, vocabulary {m.get('vocab_size')}), trained on "
                     f"`{md_text(c.get('corpus') or c.get('data') or 'the default corpus')}`.",
                     f"* Configuration: micro-batch {c.get('micro_batch')} × {c.get('seq_len')} tokens × "
                     f"{c.get('grad_accum', 1)} accumulation = {s['tokens_per_step']:,} tokens/step; {c.get('dtype')}; "
                     f"{c.get('optimizer')} AdamW; {c.get('attention')} attention; torch.compile "
                     f"{'on' if c.get('compile') else 'off'}; activation checkpointing "
                     f"{'on' if c.get('activation_checkpointing') else 'off'}.",
                     f"* Steps: {s['measured_steps']} measured after {s['warmup_steps']} warm-up steps; loss "
                     f"{show(s.get('loss_first'), 'num3', 'run.summary.loss_first')} → "
                     f"{show(s.get('loss_last'), 'num3', 'run.summary.loss_last')}, validation loss "
                     f"{show(s.get('val_loss'), 'num3', 'run.summary.val_loss')}.")
        elif b.tune:
            c = b.tune.baseline.config
            self.add(f"* Workload: the reference GPT-2 model, preset `{md_text(c.get('preset'))}`, micro-batch "
                     f"{c.get('micro_batch')} × {c.get('seq_len')} tokens, {c.get('dtype')}, {c.get('optimizer')} "
                     f"AdamW, {c.get('steps')} steps per trial ({c.get('warmup_steps')} warm-up left out).")
        if b.analysis and b.analysis.ranks:
            r = b.analysis.ranks[0]
            n = len(b.analysis.ranks)
            more = f" and {n - 1} more rank{'s' if n > 2 else ''}" if n > 1 else ""
            self.add(f"* Trace: `{md_text(r.file)}`{more}: "
                     f"{md_text(steps_shown(r.steps, r.steps_from, 'analysis.ranks[0].steps'))}, "
                     f"{show(or_default(r.events, None), 'int', 'analysis.ranks[0].events')} events.")
        self.add("", "### How", "")
        if run:
            d, fl = run["device"], run.get("flops") or {}
            peak = (f"{d['peak_tflops']:.3g} TFLOP/s dense {d['peak_dtype']} "
                    f"({md_text(peak_provenance(d.get('peak_measurement')) or d['peak_source'])}"
                    + (f", spec row `{d['spec_key']}`" if d.get("spec_key") else "") + ")"
                    if d.get("peak_tflops") is not None else "unknown (no MFU reported)")
            self.add(f"* Device: {md_text(d['name'])} [{d['kind']}], peak {peak}"
                     + (f", memory bandwidth {d['peak_bandwidth_gbs']:.3g} GB/s" if d.get("peak_bandwidth_gbs") else "")
                     + f"; torch {md_text((run.get('environment') or {}).get('torch'))}.",
                     "* Step time: wall time of each phase (data, host-to-device copy, forward, backward, "
                     "optimizer) between device synchronisations; means over the measured steps.",
                     f"* FLOPs: {md_text(fl.get('method', 'counted per step'))}; attention convention: "
                     f"{md_text(fl.get('attention_convention', '—'))}; analytic check "
                     f"{md_text(fl.get('analytic_formula', '—'))}. "
                     "MFU = model FLOPs per second / peak; FLOPs, not MACs.")
        if b.analysis and b.analysis.ranks:
            h = b.analysis.ranks[0].roofline
            f = "analysis.ranks[0].roofline"
            roofs = (f"roofs {show(or_none(h.peak_tflops), 'g3', f + '.peak_tflops')} TFLOP/s {or_none(h.dtype)} and "
                     f"{show(or_none(h.peak_bandwidth_gbs), 'g3', f + '.peak_bandwidth_gbs')} GB/s ({md_text(or_none(h.source))})"
                     if or_none(h.peak_tflops) is not None else
                     f"roofs unknown ({md_text(or_none(h.hint) or or_none(h.source) or 'no device peak')})")
            self.add("* Profile: a `torch.profiler` (Kineto) trace, analysed by `trainprof analyze` (time "
                     "breakdown, idle causes, top operators and kernels).",
                     "* Roofline (Williams et al. 2009): FLOPs and bytes of each top operator from its recorded "
                     f"input shapes (minimum traffic); {roofs}.")
            ncu = b.analysis.ncu or None
            if b.study and b.study.get("ncu") and not ncu:
                from trainprof.report import study_md

                study_md.ncu(self.add, b.study)
            elif ncu:
                self.add(f"* Nsight Compute: measured FLOPs and DRAM bytes of {ncu.kernels} "
                         f"kernels from `{md_text(ncu.file)}`.")
            else:
                self.add("* Nsight Compute was not used here; `trainprof ncu-command TRACE` prints the command "
                         "that measures the top kernels and `trainprof analyze --ncu CSV` places them on the roofline.")
        self.add("")

    def profile(self, a: Analysis | None, what: str, image: bool) -> bool:
        if not a or not a.ranks:
            return False
        r = a.ranks[0]
        at = ("analysis" if what == "baseline" else "optimised") + ".ranks[0]"
        run = self.b.run if what == "baseline" else None
        if run:
            self.run_summary(run)
        if r.has_gpu and r.temporal_breakdown.span_us:
            tb, f = r.temporal_breakdown, at + ".temporal_breakdown"
            self.add(f"{LABELS['temporal']} (span {show(tb.span_us, 'us', f + '.span_us')}): compute "
                     f"{show(tb.compute_pct, 'pct', f + '.compute_pct')}, {LABELS['temporal.communication']} "
                     f"{show(tb.communication_pct, 'pct', f + '.communication_pct')}, memcpy "
                     f"{show(tb.memcpy_pct, 'pct', f + '.memcpy_pct')}, idle {show(tb.idle_pct, 'pct', f + '.idle_pct')}; "
                     + (f"median step {show(or_none(r.step_time_us), 'us', at + '.step_time_us')}. " if or_default(r.steps, 0)
                        else "whole trace: no steps. ")
                     + f"{temporal_note(r.steps)}.", "")
            self.idle(r, at)
        metric = (or_none(r.top_ops[0].metric) if r.top_ops else None) or "time"
        self.add(f"**Top-5 operators** (by {'self CPU' if metric == 'self_cpu' else 'GPU'} time, "
                 + (f"{md_text(steps_shown(r.steps, r.steps_from, at + '.steps'))}):" if or_default(r.steps, 0)
                    else "whole trace):"), "")
        ops = r.top_ops[:5]
        self.add(*md_table(["#", "operator", "calls", "total", "mean", "share"],
                         [[str(i + 1), name, show(or_default(o.calls, None), "int", f"{at}.top_ops[{i}].calls"),
                           show(or_none(o.total_us), "us", f"{at}.top_ops[{i}].total_us"),
                           show(or_none(o.mean_us), "us", f"{at}.top_ops[{i}].mean_us"),
                           show(o.share_pct, "pct", f"{at}.top_ops[{i}].share_pct")]
                          for i, (o, name) in enumerate(zip(ops, md_codes([o.name for o in ops])))],
                         right={0, 2, 3, 4, 5}))
        if r.top_kernels:
            ks = r.top_kernels[:5]
            self.add("**Top-5 kernels:**", "")
            self.add(*md_table(["#", "kernel", "class", "count", "total", "share"],
                             [[str(i + 1), name, md_text(or_none(k.kind)), show(or_default(k.count, None), "int", f"{at}.top_kernels[{i}].count"),
                               show(or_none(k.total_us), "us", f"{at}.top_kernels[{i}].total_us"),
                               show(k.share_pct, "pct", f"{at}.top_kernels[{i}].share_pct")]
                              for i, (k, name) in enumerate(zip(ks, md_codes([k.name for k in ks])))],
                             right={0, 3, 4, 5}))
        self.roofline(r, at, image)
        self.critical_path(r, at)
        return True

    def run_summary(self, run: dict) -> None:
        """The run's headline figures and its phase split (run.json's summary)."""
        s, at = run["summary"], "run.summary."
        self.add(*md_table(["step time", "tokens/s", "model TFLOPS", "MFU", "peak memory"],
                         [[show(s["step_time_s"], "s", at + "step_time_s"), show(s["tokens_per_s"], "num0", at + "tokens_per_s"),
                           show(s.get("tflops"), "num3", at + "tflops"), show(s.get("mfu"), "frac", at + "mfu"),
                           show(s.get("peak_memory_bytes"), "bytes", at + "peak_memory_bytes")]]))
        split = s.get("phase_split") or {}
        cells = []
        for _, k in PHASES:
            p, f = split.get(k) or {}, f"{at}phase_split.{k}."
            cells.append(f"{show(p.get('mean_s'), 's', f + 'mean_s')} ({show(p.get('mean_share_pct'), 'pct', f + 'mean_share_pct')})"
                         + (f"; median {show(p['median_s'], 's', f + 'median_s')} "
                            f"({show(p['median_share_pct'], 'pct', f + 'median_share_pct')})\\*"
                            if p.get("outlier_driven") else ""))
        self.add(*md_table([p for p, _ in PHASES] + ["step"], [cells + [show(s["step_time_s"], "s", at + "step_time_s")]]))
        if any((split.get(k) or {}).get("outlier_driven") for _, k in PHASES):
            self.add("\\* a few slow steps drive this phase's mean; its median is the typical step "
                     "(docs/rules.md, noise).", "")
        if run.get("system"):
            from trainprof.report.system_terminal import energy_lines

            self.add("Energy: " + "; ".join(f"{label} {text}" for label, text in energy_lines(run["system"]))
                     + ".", "")

    def idle(self, r: Rank, at: str) -> None:
        """Why the GPU idled (HTA's window) and the communication block (whole trace), labelled by window."""
        ib, f = r.idle_breakdown, at + ".idle_breakdown"
        if ib.idle_us:
            causes = [(c, or_default(getattr(ib, f"{c}_us"), 0.0))
                      for c in ("data_loading", "allocator", "host_sync", "host_launch", "other", "unattributed")
                      if or_default(getattr(ib, f"{c}_us"), 0.0) > 0]
            self.add(f"{LABELS['idle']}: {show(ib.idle_us, 'us', f + '.idle_us')} in "
                     f"{show(ib.gaps, 'int', f + '.gaps')} gaps over a {show(ib.span_us, 'us', f + '.span_us')} span: "
                     + ", ".join(f"{c.replace('_', ' ')} {show(v, 'us', f'{f}.{c}_us')} "
                                 f"({show(getattr(ib, f'{c}_pct'), 'pct', f'{f}.{c}_pct')})" for c, v in causes)
                     + ".", "")
        comm = r.communication
        if comm and comm.kernels:
            f = at + ".communication"
            self.add(f"{LABELS['communication']}: {LABELS['communication.union']} "
                     f"{show(comm.union_us, 'us', f + '.union_us')}, {show(comm.overlap_pct, 'pct', f + '.overlap_pct')} "
                     f"{LABELS['communication.overlap']}, {show(comm.exposed_us, 'us', f + '.exposed_us')} "
                     f"{LABELS['communication.exposed']}.", "")

    def roofline(self, r: Rank, at: str, image: bool) -> None:
        from trainprof.report import roofline_md

        roofline_md.section(self.add, self.image if image else None, r, at)

    def collectives(self, multi: MultiRank | None) -> None:
        """The job's collectives matched across ranks (analysis/job/collectives_job.py)."""
        cj = multi.collectives if multi else None
        if not cj:
            return
        at = "analysis.multi_rank.collectives"
        self.add("### Collectives across ranks", "",
                 f"{cj.matched} collectives matched on {cj.ranks} ranks by content (process group, op, size; "
                 "docs/collectives.md); clocks aligned on collective ends; busbw with nccl-tests' factors.", "")
        self.add(*md_table(["group", "op", "count", "bytes", "latency p50", "skew p50", "skew max", "busbw p50 (GB/s)",
                          "overlap with compute p50"],
                         [[md_text(g.group), g.op, show(g.count, "int", f"{at}.groups[{i}].count"),
                           f"{g.bytes:,}" if g.bytes else "—",
                           show(g.median_latency_us, "us", f"{at}.groups[{i}].median_latency_us"),
                           show(g.median_skew_us, "us", f"{at}.groups[{i}].median_skew_us"),
                           show(g.max_skew_us, "us", f"{at}.groups[{i}].max_skew_us"),
                           show(g.median_busbw_gbs, "g3", f"{at}.groups[{i}].median_busbw_gbs"),
                           show(or_none(g.median_compute_overlap_pct), "pct0", f"{at}.groups[{i}].median_compute_overlap_pct")]
                          for i, g in enumerate(cj.groups)], right={2, 3, 4, 5, 6, 7, 8}))
        self.add(*md_table(["rank", "waited", "others waited for it (mean)", "share of waits", "last to arrive"],
                         [[str(r.rank), show(r.wait_us, "us", f"{at}.per_rank[{i}].wait_us"),
                           show(r.caused_wait_us, "us", f"{at}.per_rank[{i}].caused_wait_us")
                           if or_none(r.others_wait_us) is None else
                           show(r.others_wait_us, "us", f"{at}.per_rank[{i}].others_wait_us"),
                           show(r.caused_share_pct, "pct0", f"{at}.per_rank[{i}].caused_share_pct"),
                           show(r.last_count, "int", f"{at}.per_rank[{i}].last_count")] for i, r in enumerate(cj.per_rank)]))
        notes = or_none(cj.notes) or []
        if notes:
            self.add(*[f"- {md_text(n)}" for n in notes], "")  # notes name process groups: trace text

    def critical_path(self, r: Rank, at: str) -> None:
        cp, wi = r.critical_path, r.whatif
        whole = not or_default(r.steps, 0)
        if cp and cp.steps:
            f = at + ".critical_path"
            self.add("**Critical path** (" + ("of the whole trace: no steps" if whole else "what set each step's time")
                     + "; docs/critical-path.md):", "")
            self.add(*md_table(["trace" if whole else "step", "length", "share of the path by kind"],
                             [["—" if s.step < 0 else str(s.step), show(s.length_us, "us", f"{f}.steps[{i}].length_us"),
                               ", ".join(f"{k} {show(v, 'pct', f'{f}.steps[{i}].share_pct' + key(k))}"
                                         for k, v in list(s.share_pct.items())[:6])]
                              for i, s in enumerate(cp.steps)], right={0, 1}))
            top = cp.trace.top_ops[:5]
            if top:
                self.add("On the path over the whole trace: " + "; ".join(
                    f"{name} ({o.kind}) {show(o.share_pct, 'pct', f'{f}.trace.top_ops[{i}].share_pct')}"
                    for i, (o, name) in enumerate(zip(top, md_codes([o.name for o in top], 60)))) + ".", "")
        if wi and wi.scenarios:
            f = at + ".whatif"
            self.add("**What-if** (the dependency graph re-timed without each cause"
                     + ("; lengths of the whole trace, which has no steps" if whole else "") + "):", "")
            self.add(*md_table(["edit", "measured", "projected", "speed-up", "gain"],
                             [[s.label, show(s.measured_step_us, "us", f"{f}.scenarios[{i}].measured_step_us"),
                               show(s.projected_step_us, "us", f"{f}.scenarios[{i}].projected_step_us"),
                               show(s.speedup or None, "x3", f"{f}.scenarios[{i}].speedup"),
                               show(s.gain_pct, "pct", f"{f}.scenarios[{i}].gain_pct")]
                              for i, s in enumerate(wi.scenarios)], right={1, 2, 3, 4}))

    def optimisations(self) -> list[dict]:
        b = self.b
        self.add("## 3. Optimisations chosen and why", "")
        findings = _findings(b.analysis, "analysis") or _run_findings(b.run)
        if findings:
            self.add("The diagnosis rules flagged (ranked by estimated gain, an upper bound on the share "
                     f"{_gain_of(b)} a fix recovers; info: under 0.5%, a note rather than a claim):", "")
            for i, (at, f) in enumerate(findings, 1):
                self.add(f"{i}. **{md_text(f.get('title'))}** ({f.get('severity')}, {_gain(at, f, _gain_of(b))}, "
                         f"{f.get('confidence')} confidence). "
                         f"Evidence: {md_text(f.get('evidence'))}. "
                         f"Fix: {md_text(f.get('fix'))}.")
            self.add("")
        else:
            self.add("No diagnosis rule fired above its threshold.", "")
        if b.tune:
            from trainprof.report import tune_md

            tune_md.ladder(self.add, b.tune)
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
        if b.study:
            from trainprof.report import study_md

            if study_md.missing(self.add, b.study, ("tune", "optimised")):
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
        if b.study:
            from trainprof.report import study_md

            if b.study.get("speedup"):
                study_md.speedup(self.add, b.study)  # the one final figure, at equal work
                self.before_after()
                return
            if study_md.missing(self.add, b.study, ("tune", "optimised", "diff")):
                return
        said = False
        if b.tune:
            t, best = b.tune, b.tune.best
            v = best.verify or Verify()
            passed = [r for r in t.trials if r.accepted]  # kept = these, once the verify pairs confirm them
            rows = [["baseline", ms(t.baseline.step_time_s), f"{t.baseline.tokens_per_s:,.0f}", "1.00"]]
            if passed:
                last = passed[-1]
                label = "kept" if best.knobs else "passed their trials, not kept"
                rows.append([f"{label} ({md_text(', '.join(r.knob for r in passed))}), ladder trial",
                             ms(last.step_time_s), f"{last.tokens_per_s or 0:,.0f}",
                             f"{last.speedup:.2f}" if last.speedup else "—"])
            self.add(*md_table(["configuration", "step time (median)", "tokens/s", "× baseline"], rows, right={1, 2, 3}))
            if best.unconfirmed:
                u = best.unconfirmed
                self.add(f"**No verified speed-up**: {md_text(u.reason)} (range {v.speedup_min or 0:.2f}–"
                         f"{v.speedup_max or 0:.2f}×): {md_text(', '.join(u.knobs))} passed their trials but are not "
                         "kept, and the baseline stays the best configuration.", "")
            elif best.knobs and not v.speedup_median:
                self.add(f"Kept {md_text(', '.join(best.knobs))} on single ladder trials; not verified in "
                         "alternating pairs (no verify pair ran).", "")
            elif v.speedup_median:
                self.add(f"**Verified speed-up: {v.speedup_median:.2f}×** the baseline's tokens/s per iteration "
                         f"(median of {len(v.pairs)} alternating best/baseline pairs, range "
                         f"{v.speedup_min or 0:.2f}–{v.speedup_max or 0:.2f}×).", "",
                         f"Reproduce: `{md_text(best.command)}`", "")
            else:
                self.add("No knob was both faster and accurate: the baseline stays the best configuration.", "")
            said = True
        if b.diff:
            said = self.before_after() or said
        if not said:
            self.add("No before/after measurement in this folder (`trainprof tune` verifies one; "
                     "`trainprof diff BASE NEW --out DIR` compares two traces).", "")

    def before_after(self) -> bool:
        """The two profiles compared (diff.json): the step time and the operators that moved
        most, by what the traces hold (self CPU time on a CPU trace, GPU time on a GPU one)."""
        from trainprof.report.diff_text import changes_markdown, ops_title

        d = self.b.diff
        if not d:
            return False
        st = d.step_time_us
        unlike = self.b.study is not None and (self.b.study.get("speedup") or {}).get("equal_tokens_per_step") is False
        if st.base is not None and st.new is not None:
            why = [md_text(st.source)] if st.source else []
            if unlike:
                why.append("steps of different tokens, compared per token above")
            self.add(f"Profiled step time {md_us(st.base)} → {md_us(st.new)}"
                     + (f": **{st.speedup:.2f}×**" if st.speedup and not unlike else "")
                     + f" ({'; '.join([*why, '`trainprof diff`'])}).", "")
        self.add(*changes_markdown(d.ops, f"**Before / after: {ops_title(d)}** (biggest change first)", 8))
        return True

    def remaining(self, findings: list[dict]) -> None:
        b = self.b
        self.add("## 6. Analysis and what could still be done", "")
        after = _findings(b.optimised, "optimised")
        if after:
            self.add("Still flagged in the optimised profile:", "")
            for at, f in after:
                self.add(f"* **{md_text(f.get('title'))}** ({_gain(at, f)}): {md_text(f.get('fix'))}")
            self.add("")
        elif findings:
            kept = set(b.tune.best.knobs if b.tune else [])
            self.add("Findings from the baseline that remain candidates"
                     + (f" (the ladder kept {', '.join(sorted(kept))})" if kept else "") + ":", "")
            for at, f in findings:
                self.add(f"* **{md_text(f.get('title'))}** ({_gain(at, f, _gain_of(b))}): {md_text(f.get('fix'))}")
            self.add("")
        if b.tune:
            rejected = [r for r in b.tune.trials if not r.accepted and not r.skipped]
            if rejected:
                self.add("Knobs that did not help here (worth retrying on other hardware or sizes): "
                         + "; ".join(f"{md_text(r.knob)}: {md_text(r.reason)}" for r in rejected) + ".", "")
        m = b.memory
        if m:
            above = m.measured_above_baseline_bytes
            measured = (show(above, "bytes", "memory.measured_above_baseline_bytes") + " above the baseline"
                        if above is not None else show(m.measured_peak_bytes, "bytes", "memory.measured_peak_bytes"))
            self.add(f"Memory: analytic peak {show(m.analytic_peak_bytes, 'bytes', 'memory.analytic_peak_bytes')}, "
                     f"measured {measured}"
                     + (f"; the largest micro-batch that fits is {m.max_micro_batch}" if m.max_micro_batch
                        else "") + ".", "")
        e = b.ettr
        if e and e.ettr is not None:
            lost = ", ".join(f"{k.replace('_', ' ')} {show(v, 'num2', 'ettr.lost_s' + key(k))} s"
                             for k, v in e.lost_s.items() if v)
            self.add(f"Effective training time ratio {show(e.ettr, 'frac', 'ettr.ettr')} "
                     f"({show(e.productive_s, 'num2', 'ettr.productive_s')} s productive of "
                     f"{show(e.wall_s, 'num2', 'ettr.wall_s')} s wall" + (f"; lost: {lost}" if lost else "") + ").", "")
        if b.run and b.run["device"].get("peak_source") == "measured":
            self.add("On a CPU the peak is a measured matmul rate on this machine (no datasheet), so MFU there "
                     "is relative to what this machine reached, and timings on a shared machine are noisy.", "")
        if b.study:
            from trainprof.report import study_md

            study_md.problems(self.add, b.study, [f for _, f in findings], b.tune)
        self.add("## References", "",
                 "1. S. Williams, A. Waterman, D. Patterson. Roofline: an insightful visual performance model for "
                 "multicore architectures. CACM 52(4), 2009.",
                 "2. A. Chowdhery et al. PaLM: Scaling Language Modeling with Pathways, 2022 (App. B: model FLOPs "
                 "utilisation).", "")


def _findings(a: Analysis | None, name: str) -> list[tuple[str, dict]]:
    """The first rank's and the job's findings as written (dicts) with their paths in the
    record `name` (report/figures.py), biggest gain first."""
    if not a or not a.ranks:
        return []
    out = [(f"{name}.ranks[0].findings[{i}]", f) for i, f in enumerate(msgspec.to_builtins(a.ranks[0].findings or []))]
    if a.multi_rank:
        out += [(f"{name}.multi_rank.findings[{i}]", f)
                for i, f in enumerate(msgspec.to_builtins(a.multi_rank.findings or []))]
    # info findings (a gain under 0.5%: diagnose/finding.py) after every claim, the claims by what a
    # fix gives back (the projection where there is one, else the bound: analysis/graph/projection.py)
    return sorted(out, key=lambda af: (af[1].get("severity") == "info", rank_key(af[1])))


def _run_findings(run: dict | None) -> list[tuple[str, dict]]:
    return [(f"run.findings[{i}]", f) for i, f in enumerate((run or {}).get("findings") or [])]


def _gain(at: str, f: dict, of: str = "of step time") -> str:
    """A finding's bound on the share (`of`: of step time, or of the trace's time) a fix
    recovers, and the what-if's projection."""
    if not f.get("estimated_gain_pct"):
        return "a caveat: no speed-up claimed"
    return (f"up to {show(f['estimated_gain_pct'], 'pct', at + '.estimated_gain_pct')} {of}"
            + (f", projected {show(f['projected_gain_pct'], 'pct', at + '.projected_gain_pct')}"
               if f.get("projected_gain_pct") is not None else ""))


def _gain_of(b: Bundle) -> str:
    """What a finding's gain is a share of: a step, or the whole trace when it has no steps."""
    r = b.analysis.ranks[0] if b.analysis and b.analysis.ranks else None
    return "of the trace's time" if r is not None and not or_default(r.steps, 0) and not b.run else "of step time"


def render_markdown(b: Bundle, out_dir: Path | None = None) -> str:
    """`out_dir`: where report.md goes (images are linked relative to it)."""
    from trainprof.report.text import visible_bundle

    b = visible_bundle(b)  # trace-derived names: control characters shown, never sent
    md = _Md(b, Path(out_dir) if out_dir is not None else b.folder)
    run = b.run
    title = (f"{run['model'].get('preset') or run['model'].get('class')} on {run['device']['name']}" if run else b.name)
    if b.study:
        files = ", ".join(f"`{v}`" for v in b.files if v != "study.json")  # the records there, not those planned
        md.add(f"# Training performance study: {md_text(title)}", "",
               f"Written by `trainprof study` (and `trainprof report`) from `study.json` and {files}.", "")
    else:
        md.add(f"# Training performance report: {md_text(title)}", "",
               f"Written by `trainprof report` from {', '.join(f'`{f}`' for f in b.files)}.", "")
    md.method()
    bad = (b.analysis.unreadable or []) if b.analysis else []
    if bad:  # ranks the job's numbers leave out: say so before any of them
        md.add(f"**{len(bad)} unreadable trace(s), left out of everything below:**", "",
               *md_table(["trace", "error"], [[md_text(e.file), md_text(e.error)] for e in bad], right=set()))
    if b.study:
        from trainprof.report import study_md

        study_md.stages(md.add, b.study)
    md.add("## 2. Baseline profile", "")
    if not md.profile(b.analysis, "baseline", image=True):
        if run:
            s = run["summary"]
            at = "run.summary."
            md.add(*md_table(["step time", "tokens/s", "model TFLOPS", "MFU"],
                           [[show(s["step_time_s"], "s", at + "step_time_s"),
                             show(s["tokens_per_s"], "num0", at + "tokens_per_s"),
                             show(s.get("tflops"), "num3", at + "tflops"), show(s.get("mfu"), "frac", at + "mfu")]]))
        md.add("No operator profile in this folder: `trainprof run --profile` (or `trainprof analyze TRACE --out "
               "DIR`) records the top operators and their roofline.", "")
    md.collectives(b.analysis.multi_rank or None if b.analysis else None)
    findings = md.optimisations()
    md.optimised()
    md.speedup()
    md.remaining(findings)
    return "\n".join(md.lines).rstrip() + "\n"
