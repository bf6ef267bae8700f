"""`trainprof study`: the profiling assignment end to end (jobs/study.py does the work)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StudyFlags:
    """Where the study goes (its configuration is jobs/study.StudyConfig)."""

    out: str | None = None
    """study folder (default runs/study-<timestamp>)"""
    resume: bool = False
    """continue the study in --out from its journal (its configuration wins; the budget may be raised)"""
    force: bool = False
    """replace an existing non-empty --out"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.study import StudyConfig

    p = sub.add_parser("study", help="the whole assignment: baseline, profile, top-5 on the roofline, tune, "
                       "optimised profile, diff, report",
                       description="Train the reference workload with validation loss, profile one iteration, "
                       "place the top-5 operators on the roofline (with the Nsight Compute command for their "
                       "kernels), climb the tune ladder with the accuracy guard inside the budget, profile the "
                       "best configuration, compare the two profiles and write report.md and report.html. "
                       "Resumable with --resume.")
    # the study's knobs are StudyConfig's fields (jobs/study.py); --knobs is a list, parsed here
    fields = [f.name for f in dataclasses.fields(StudyConfig)]
    cut = fields.index("knobs")
    add_flags(p, StudyConfig, only=fields[:cut])
    p.add_argument("--knobs", help="comma-separated subset of the tune catalogue (default: the speed ladder)")
    # --budget-minutes is None when not given: a resumed study keeps its journaled budget
    add_flags(p, StudyConfig, only=fields[cut + 1:], defaults={"budget_minutes": None}, helps={
        "budget_minutes": "wall time for the whole study; the tune gets what the rest leaves "
                          f"(default {StudyConfig.budget_minutes:g})"})
    add_flags(p, StudyFlags, switches=True)
    p.set_defaults(func=study)


def study(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainprof.errors import InputError
    from trainprof.flags import from_args
    from trainprof.jobs.study import STAGES, StudyConfig, start

    knobs = tuple(k.strip() for k in args.knobs.split(",") if k.strip()) if args.knobs else None
    given = [f.name for f in dataclasses.fields(StudyConfig) if f.name != "knobs"
             and not (f.name == "budget_minutes" and args.budget_minutes is None)]
    cfg = from_args(StudyConfig, args, only=given, knobs=knobs)
    if cfg.knobs:
        from trainprof.tune.catalogue import by_name

        by_name(list(cfg.knobs))  # an unknown knob fails now, not after the baseline
    if args.data is not None and not Path(args.data).exists():
        raise InputError(f"--data {args.data}: no such file or folder")
    out = Path(args.out) if args.out else Path("runs") / _dt.datetime.now().strftime("study-%Y%m%d-%H%M%S")
    err = Console(stderr=True)
    status = err.status("study: starting")
    state = {"stage": "", "expected": 0.0, "live": False}

    def on_event(kind: str, info: dict) -> None:
        if kind == "start":
            state.update(stage=info["stage"], expected=info["expected_s"])
            status.update(f"study [{info['index']}/{info['of']}] [bold]{info['stage']}[/] — expected "
                          f"~{_dur(info['expected_s'])} ({_dur(info['spent_s'])} of the {_dur(info['budget_s'])} "
                          "budget spent)")
            if not state["live"]:  # started with the first stage: a bad flag prints one clean line
                status.start()
                state["live"] = True
        elif kind == "trial":
            status.update(f"study [{STAGES.index('tune') + 1}/{len(STAGES)}] [bold]tune[/] — trial "
                          f"{info['knob']} done; stage expected ~{_dur(state['expected'])}")
        elif kind == "done":
            status.console.print(f"  {info['stage']:<10} done in {_dur(info['wall_s'])}")
        elif kind == "skip":
            status.console.print(f"  {info['stage']:<10} already done ({_dur(info['wall_s'])}, journal)")

    from trainprof import owned

    with owned.tracking(out):  # each file the study writes joins the folder's manifest (--force removes those)
        s = start(out, cfg, resume=args.resume, force=args.force, budget_given=args.budget_minutes is not None,
                  on_event=on_event)
        try:
            doc = s.run_all()
        finally:
            if state["live"]:
                status.stop()
    con = Console()
    _print_result(doc, out, con)
    return 0


def _dur(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _print_result(doc: dict, out: Path, con) -> None:  # noqa: ANN001
    import json

    from trainprof.controls import visible
    from trainprof.report.fit import FitTable

    t = FitTable(title=f"Study {out} (budget {_dur(doc['budget_s'])}, spent {_dur(doc['spent_s'])})",
                 title_justify="left")
    for c in ("stage", "wall", "expected"):
        t.add_column(c, justify="left" if c == "stage" else "right")
    for st in doc["stages"]:
        t.add_row(st["stage"], _dur(st["wall_s"]) if st["wall_s"] is not None else "—", _dur(st["expected_s"]))
    con.print(t)
    diff_path = out / "diff.json"
    if diff_path.is_file():
        st = json.loads(diff_path.read_text("utf-8"))["step_time_us"]
        if st.get("speedup"):
            con.print(f"profiled iteration {st['base'] / 1e3:,.1f} ms → {st['new'] / 1e3:,.1f} ms: "
                      f"[bold]{st['speedup']:.2f}×[/] ({(doc.get('choice') or {}).get('what', '')} configuration)")
    con.print(visible(f"wrote {out / 'report.md'} and {out / 'report.html'} (records: "
                      + ", ".join(doc.get("records", {}).values()) + ")"), markup=False, soft_wrap=True)
