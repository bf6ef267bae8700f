"""The parts of report.md only a `trainprof study` folder fills (jobs/study.py): the stages
with their times and why one was skipped, the budget, the Nsight Compute plan, the optimised
run beside the baseline with the guard's verdict, the speed-up at equal work, the problems
met, how to reproduce.

Every figure is read from study.json or the records it names; the two conclusions are the
sentences of report/study_text.py, which the terminal and report.html print too.
"""

from __future__ import annotations

from typing import Callable

from trainprof.recordtypes.base import known, or_default
from trainprof.recordtypes.tune import Tune
from trainprof.report.figures import show
from trainprof.report.md_cells import md_table, md_text

Add = Callable[..., None]


def spent_field(study: dict) -> str:
    """study.json's field for what was spent before the report stage (the report's own time
    is added after it writes)."""
    return "study.spent_before_s" if study.get("spent_before_s") is not None else "study.spent_s"


def stage_note(row: dict, study: dict) -> str:
    """Why a stage was skipped or failed, or that a run stopped at its share of the budget."""
    if row.get("reason"):
        return row["reason"]
    ran, asked = row.get("steps_run"), (study.get("config") or {}).get("steps")
    if row["stage"] == "baseline" and ran is not None and asked and ran < asked:
        return f"stopped after {ran} of {asked} steps: its share of the budget"
    if row["stage"] == "optimised" and ran is not None:
        return f"{ran} steps, as many as the baseline ran"
    return ""


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
    rows = [[st["stage"], what.get(st["stage"], ""), "written" if st["stage"] == "report" else st.get("status", ""),
             show(st.get("expected_s"), "dur", f"study.stages[{i}].expected_s"),
             "(this file)" if st["stage"] == "report" else show(st.get("wall_s"), "dur", f"study.stages[{i}].wall_s"),
             md_text(stage_note(st, study))]
            for i, st in enumerate(study.get("stages", []))]
    spent = spent_field(study)
    add(*md_table(["stage", "what", "status", "expected", "took", "note"], rows, {3, 4}))
    add(f"Budget {show(study.get('budget_s'), 'dur', 'study.budget_s')}, spent "
        f"{show(study.get(spent.split('.')[1]), 'dur', spent)} before the report: one wall-clock deadline for "
        "every stage, each skipped when its estimate (from the baseline's measured steps) does not fit in what is "
        "left. Each run and tune trial is a fresh `trainprof run` process (its own peak memory and caches). The "
        "journal (`journal.jsonl`) makes the study resumable: `trainprof study --resume --out DIR`.", "")
    if study.get("budget_note"):
        add(f"This session: {md_text(study['budget_note'])}.", "")
    m = study.get("machine") or {}
    if m.get("cpu_count") is not None:
        parts = [f"{show(m['cpu_count'], 'int', 'study.machine.cpu_count')} CPU cores"]
        if (m.get("cpu_util_pct") or {}).get("mean") is not None:
            parts.append(f"CPU busy {show(m['cpu_util_pct']['mean'], 'pct0', 'study.machine.cpu_util_pct.mean')} "
                         "(mean, all cores)")
        if (m.get("others_cpu_pct") or {}).get("mean") is not None:
            parts.append(f"other processes {show(m['others_cpu_pct']['mean'], 'pct0', 'study.machine.others_cpu_pct.mean')}"
                         " of all cores")
        if (m.get("load_avg_1m") or {}).get("mean") is not None:
            parts.append(f"1-minute load average {show(m['load_avg_1m']['mean'], 'num1', 'study.machine.load_avg_1m.mean')}")
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
        add(f"* Nsight Compute: not run. {md_text(n.get('reason'))}.", "")
    add("```bash", n["collect"], n["export"], "```", "")


def optimised_run(add: Add, study: dict, base: dict | None, new: dict | None) -> None:
    """Which configuration the optimised profile is, and its run beside the baseline's."""
    c = study.get("choice") or {}
    knobs = ", ".join(c.get("knobs") or [])
    why = {"best": f"the tune's best configuration ({md_text(knobs)})",
           "unconfirmed": f"the knobs that passed their ladder trials ({md_text(knobs)}), which the alternating verify "
                          "pairs did not confirm (so not kept): profiled to show what they change",
           "baseline": "no knob was kept, so this is a second profile of the baseline: the difference from the "
                       "first is run-to-run noise"}.get(c.get("what"), "")
    if why:
        add(f"Configuration: {why}.", "", f"Command: `{md_text(c.get('command'))}`", "")
    if base and new:
        # the baseline is the folder's run.json (`run`), the optimised run its optimised/run.json
        # (`optimised_run`): each figure in the format run.json's other renderers use
        b, n = base["summary"], new["summary"]

        def both(key: str, fmt: str) -> list[str]:
            return [show(b.get(key), fmt, f"run.summary.{key}"), show(n.get(key), fmt, f"optimised_run.summary.{key}")]

        loss = [f"{show(x.get('loss_first'), 'num3', f'{rec}.summary.loss_first')} → "
                f"{show(x.get('loss_last'), 'num3', f'{rec}.summary.loss_last')}"
                for x, rec in ((b, "run"), (n, "optimised_run"))]
        rows = [["median step", *both("step_time_median_s", "s")], ["tokens/s", *both("tokens_per_s", "num0")],
                ["MFU", *both("mfu", "frac")], ["peak memory", *both("peak_memory_bytes", "bytes")],
                ["training loss", *loss], ["validation loss", *both("val_loss", "num3")]]
        add(*md_table(["", "baseline run", "optimised run"], rows, {1, 2}))
    acc = study.get("accuracy")
    if acc:
        from trainprof.report.study_text import accuracy_sentence

        add(f"**Accuracy** (the tune's guard, docs/tuning.md, on these two runs): {md_text(accuracy_sentence(acc))}.", "")


def speedup(add: Add, study: dict) -> None:
    """The one final speed-up (tokens/s at equal work) with what it rests on, then the runs'
    and the profiled iteration's figures, per step only when the steps hold the same tokens."""
    from trainprof.report.study_text import speedup_sentence

    sp = study.get("speedup")
    if not sp:
        return
    add(f"**Speed-up: {md_text(speedup_sentence(sp))}.**", "")
    r, p = sp["runs"], sp["profiled"]
    equal = sp.get("equal_tokens_per_step")
    fr, fp = "study.speedup.runs.", "study.speedup.profiled."
    rows = [["tokens/s, median measured step of each run", show(r.get("base_tokens_per_s"), "num0", fr + "base_tokens_per_s"),
             show(r.get("new_tokens_per_s"), "num0", fr + "new_tokens_per_s"), show(r.get("speedup") or None, "x2", fr + "speedup")],
            ["tokens per step", show(r["base_tokens_per_step"], "num0", fr + "base_tokens_per_step"),
             show(r["new_tokens_per_step"], "num0", fr + "new_tokens_per_step"), ""]]
    if p.get("per") == "step":
        rows.append([md_text(p["source"]), show(p.get("base_us"), "us", fp + "base_us"), show(p.get("new_us"), "us", fp + "new_us"),
                     show(p.get("speedup") or None, "x2", fp + "speedup")])
    else:
        rows.append([md_text(p["source"]) + ", per token", show(p.get("base_us_per_token"), "us", fp + "base_us_per_token"),
                     show(p.get("new_us_per_token"), "us", fp + "new_us_per_token"), show(p.get("speedup") or None, "x2", fp + "speedup")])
    add(*md_table(["measured as", "baseline", "optimised", "speed-up"], rows, {1, 2, 3}))
    add(("Both configurations run the same tokens per step, so step times compare directly. " if equal else
         "The configurations run different tokens per step, so the profiled iteration is compared per token, "
         "never step against step. ")
        + "The profiled iteration is one step under the profiler and the run medians come from two processes "
          "that did not alternate; on a shared machine the tune's alternating pairs are the stronger evidence.", "")


def _status(study: dict, stage: str) -> str | None:
    return next((st.get("status") for st in study.get("stages") or [] if st["stage"] == stage), None)


def missing(add: Add, study: dict, stages: tuple[str, ...]) -> bool:
    """Say which stage this part of the report needed and why it did not run (True if one)."""
    for stage in stages:
        st = next((x for x in study.get("stages") or [] if x["stage"] == stage), None)
        if st and st.get("status") != "done":
            why = f": {md_text(st['reason'])}" if st.get("reason") else ""
            add(f"The study's {stage} stage {'did not run' if st['status'] == 'pending' else 'was ' + st['status']}"
                f"{why}. `trainprof study --resume --out DIR --budget-minutes M` runs what is left with M more "
                "minutes.", "")
            return True
    return False


def problems(add: Add, study: dict, findings: list[dict], tune: Tune | None) -> None:
    """What went wrong or limited the study, from the records."""
    add("### Problems met and how they were handled", "")
    items = []
    for f in findings:
        if f.get("id") == "contended_machine":
            items.append(f"The machine was shared while the study ran ({md_text(f.get('evidence'))}): single "
                         "timings are noisy, so the tune keeps a knob only when it is ≥ min-gain faster and "
                         "confirms the combination in alternating baseline/best pairs.")
    for st in study.get("stages") or []:
        note = stage_note(st, study)
        if st.get("status") in ("skipped", "failed"):
            items.append(f"Stage {st['stage']} {st['status']}: {md_text(note)}.")
        elif st["stage"] == "baseline" and note:
            items.append(f"The baseline run {md_text(note)}" + ("; the optimised run trained as many steps, so their "
                         "validation losses compare." if _status(study, "optimised") == "done" else "."))
    for c in study.get("config_changes") or []:
        items.append(f"Resumed with a changed configuration (--resume-anyway): {md_text(c)}; the stages run before "
                     "the change used the old value.")
    if tune:
        failed = [t for t in tune.trials if not t.skipped and t.ok is False]
        for t in failed:
            items.append(f"Trial `{md_text(t.knob)}` failed: {md_text(t.reason)}; it was rejected and the ladder "
                         "went on.")
        budget = [t.knob for t in tune.trials if (t.reason or "").startswith("time budget")]
        if budget:
            items.append(f"The budget ran out before {len(budget)} knob(s) were tried ({md_text(', '.join(budget))}); "
                         "`trainprof study --resume --out DIR --budget-minutes M` gives M more minutes to try them.")
        v = tune.best.verify
        if v is not None and known(v.skipped_pairs):
            items.append(f"{v.skipped_pairs} verify pair(s) not run: {md_text(or_default(v.skipped_reason, ''))}.")
        acc = [t.knob for t in tune.trials if t.ok is True and t.accuracy_ok is False]
        if acc:
            items.append(f"Faster but rejected by the accuracy guard: {md_text(', '.join(acc))}.")
    if not items:
        items.append("No stage or trial failed, and no sign of machine contention was recorded.")
    add(*[f"* {x}" for x in items], "")
    add("### Reproduce", "",
        "`reproduce.sh` (the two profiled runs) and `requirements.txt` (the versions from run.json) are in this "
        "folder; `trainprof study` with the configuration in `study.json` repeats everything.", "")
