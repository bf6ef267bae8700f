"""The parts of report.md only a `trainprof study` folder fills (jobs/study.py): the stages
and their times, the Nsight Compute plan, the optimised run beside the baseline (accuracy
kept?), the time per iteration measured two ways, the problems met, how to reproduce.

Every figure is read from study.json or the records it names.
"""

from __future__ import annotations

from typing import Any, Callable

from trainprof.recordtypes.tune import Tune
from trainprof.report.units import gib, ms, num, pct, us

Add = Callable[..., None]


def _t(text: Any) -> str:
    from trainprof.report.markdown import _t as esc

    return esc(text)


def _table(head: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    from trainprof.report.markdown import _table as table

    return table(head, rows, right)


def _dur(s: float | None) -> str:
    return "—" if s is None else (f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min")


def stages(add: Add, study: dict) -> None:
    """How the study ran: the stages with their expected and measured times, the machine."""
    add("### Stages (`trainprof study`)", "")
    what = {"baseline": "train the baseline (validation loss) and profile one iteration",
            "tune": "optimisation ladder with the accuracy guard, inside the budget",
            "optimised": "train and profile the chosen configuration the same way",
            "diff": "compare the two profiles per iteration",
            "report": "this report and report.html"}
    # the report stage is still running while it writes this file: its own time is in
    # study.json afterwards, so a later `trainprof report` renders the same text
    rows = [[st["stage"], what.get(st["stage"], ""), _dur(st.get("expected_s")),
             "(this file)" if st["stage"] == "report" else _dur(st.get("wall_s"))]
            for st in study.get("stages", [])]
    spent = sum(st.get("wall_s") or 0.0 for st in study.get("stages", []) if st["stage"] != "report")
    add(*_table(["stage", "what", "expected", "took"], rows, {2, 3}))
    add(f"Budget {_dur(study.get('budget_s'))}, spent {_dur(spent)} before the report; each run and tune trial is a "
        "fresh `trainprof run` process (its own peak memory and caches). The journal (`journal.jsonl`) makes the "
        "study resumable: `trainprof study --resume --out DIR`.", "")
    m = study.get("machine") or {}
    if m.get("cpu_count") is not None:
        parts = [f"{m['cpu_count']} CPU cores"]
        if (m.get("cpu_util_pct") or {}).get("mean") is not None:
            parts.append(f"CPU busy {m['cpu_util_pct']['mean']:.0f}% (mean, all cores)")
        if (m.get("others_cpu_pct") or {}).get("mean") is not None:
            parts.append(f"other processes {m['others_cpu_pct']['mean']:.0f}% of all cores")
        if (m.get("load_avg_1m") or {}).get("mean") is not None:
            parts.append(f"1-minute load average {m['load_avg_1m']['mean']:.1f}")
        add("Machine during the baseline run: " + ", ".join(parts) + ".", "")


def ncu(add: Add, study: dict) -> None:
    n = study.get("ncu")
    if not n:
        return
    if n.get("applies"):
        add(f"* Nsight Compute: the commands below profile the top-{len(n.get('kernels') or [])} kernels of the "
            "baseline's profiled iteration with the roofline sections; `trainprof analyze TRACE --ncu "
            "study_ncu.csv` places them on the roofline beside the shape-derived points.", "")
    else:
        add(f"* Nsight Compute: not run. {_t(n.get('reason'))}.", "")
    add("```bash", n["collect"], n["export"], "```", "")


def optimised_run(add: Add, study: dict, base: dict | None, new: dict | None) -> None:
    """Which configuration the optimised profile is, and its run beside the baseline's."""
    c = study.get("choice") or {}
    knobs = ", ".join(c.get("knobs") or [])
    why = {"best": f"the tune's best configuration ({_t(knobs)})",
           "unconfirmed": f"the knobs the ladder kept ({_t(knobs)}) although the alternating verify pairs did not "
                          "confirm them: profiled to show what they change",
           "baseline": "no knob was kept, so this is a second profile of the baseline: the difference from the "
                       "first is run-to-run noise"}.get(c.get("what"), "")
    if why:
        add(f"Configuration: {why}.", "", f"Command: `{_t(c.get('command'))}`", "")
    if base and new:
        b, n = base["summary"], new["summary"]
        def tps(v: float | None) -> str:
            return "—" if v is None else f"{v:,.0f}"

        rows = [["median step", ms(b.get("step_time_median_s")), ms(n.get("step_time_median_s"))],
                ["tokens/s", tps(b.get("tokens_per_s")), tps(n.get("tokens_per_s"))],
                ["MFU", pct(b.get("mfu")), pct(n.get("mfu"))],
                ["peak memory", gib(b.get("peak_memory_bytes")), gib(n.get("peak_memory_bytes"))],
                ["training loss", f"{num(b.get('loss_first'))} → {num(b.get('loss_last'))}",
                 f"{num(n.get('loss_first'))} → {num(n.get('loss_last'))}"],
                ["validation loss", num(b.get("val_loss")), num(n.get("val_loss"))]]
        add(*_table(["", "baseline run", "optimised run"], rows, {1, 2}))
        if b.get("val_loss") is not None and n.get("val_loss") is not None:
            d = n["val_loss"] - b["val_loss"]
            add(f"Accuracy: validation loss {num(b['val_loss'])} → {num(n['val_loss'])} "
                f"(Δ {d:+.3f}; the tune's accuracy guard bounds this by the seed-to-seed noise).", "")


def iteration(add: Add, study: dict) -> None:
    it = study.get("iteration")
    if not it:
        return
    p, r = it["profiled"], it["runs"]
    rows = [[_t(p["source"]), us(p["base_us"], 2), us(p["new_us"], 2),
             f"{p['speedup']:.2f}×" if p.get("speedup") else "—"],
            [_t(r["source"]), ms(r["base_s"]), ms(r["new_s"]), f"{r['speedup']:.2f}×" if r.get("speedup") else "—"]]
    add("Time per iteration, baseline → optimised configuration:", "")
    add(*_table(["measured as", "baseline", "optimised", "speed-up"], rows, {1, 2, 3}))
    add("The profiled iteration is one step under the profiler; the run medians come from two separate "
        "processes that did not alternate, so on a shared machine the tune's alternating pairs are the "
        "stronger evidence.", "")


def problems(add: Add, study: dict, findings: list[dict], tune: Tune | None) -> None:
    """What went wrong or limited the study, from the records."""
    add("### Problems met and how they were handled", "")
    items = []
    for f in findings:
        if f.get("id") == "contended_machine":
            items.append(f"The machine was shared while the study ran ({_t(f.get('evidence'))}): single "
                         "timings are noisy, so the tune keeps a knob only when it is ≥ min-gain faster and "
                         "confirms the combination in alternating baseline/best pairs.")
    if tune:
        failed = [t for t in tune.trials if not t.skipped and t.ok is False]
        for t in failed:
            items.append(f"Trial `{_t(t.knob)}` failed: {_t(t.reason)}; it was rejected and the ladder "
                         "went on.")
        budget = [t.knob for t in tune.trials if t.reason == "time budget spent"]
        if budget:
            items.append(f"The budget ran out before {len(budget)} knob(s) were tried ({_t(', '.join(budget))}); "
                         "`trainprof study --resume --out DIR --budget-minutes M` with a larger M tries them.")
        acc = [t.knob for t in tune.trials if t.ok is True and t.accuracy_ok is False]
        if acc:
            items.append(f"Faster but rejected by the accuracy guard: {_t(', '.join(acc))}.")
    if not items:
        items.append("No stage or trial failed, and no sign of machine contention was recorded.")
    add(*[f"* {x}" for x in items], "")
    add("### Reproduce", "",
        "`reproduce.sh` (the two profiled runs) and `requirements.txt` (the versions from run.json) are in this "
        "folder; `trainprof study` with the configuration in `study.json` repeats everything.", "")
