"""`trainprof study`: the profiling assignment end to end (jobs/study.py does the work)."""

from __future__ import annotations

import argparse
import datetime as _dt
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.jobs.study import StudyConfig

    d = StudyConfig()
    p = sub.add_parser("study", help="the whole assignment: baseline, profile, top-5 on the roofline, tune, "
                       "optimised profile, diff, report",
                       description="Train the reference workload with validation loss, profile one iteration, "
                       "place the top-5 operators on the roofline (with the Nsight Compute command for their "
                       "kernels), climb the tune ladder with the accuracy guard inside the budget, profile the "
                       "best configuration, compare the two profiles and write report.md and report.html. "
                       "Resumable with --resume.")
    p.add_argument("--preset", default=d.preset, help=f"model size (default {d.preset})")
    p.add_argument("--device", default=d.device, help="auto, cpu, cuda or cuda:N (default auto)")
    p.add_argument("--micro-batch", type=int, help="sequences per forward (default: the preset's)")
    p.add_argument("--seq-len", type=int, help="tokens per sequence (default: the preset's context)")
    p.add_argument("--dtype", default=d.dtype, help="the baseline's dtype (default fp32: mixed precision is a knob)")
    p.add_argument("--steps", type=int, default=d.steps, help=f"steps of the baseline and optimised runs (default {d.steps})")
    p.add_argument("--warmup-steps", type=int, default=d.warmup_steps, help=f"left out of summaries (default {d.warmup_steps})")
    p.add_argument("--eval-batches", type=int, default=d.eval_batches, help=f"validation batches (default {d.eval_batches})")
    p.add_argument("--profile-steps", type=int, default=d.profile_steps, help=f"iterations profiled (default {d.profile_steps})")
    p.add_argument("--tune-steps", type=int, default=d.tune_steps, help=f"steps per tune trial (default {d.tune_steps})")
    p.add_argument("--verify-trials", type=int, default=d.verify_trials,
                   help=f"best-vs-baseline pairs (default {d.verify_trials})")
    p.add_argument("--knobs", help="comma-separated subset of the tune catalogue (default: the speed ladder)")
    p.add_argument("--min-gain", type=float, default=d.min_gain, help=f"keep a knob if ≥ this faster (default {d.min_gain})")
    p.add_argument("--budget-minutes", type=float,
                   help=f"wall time for the whole study; the tune gets what the rest leaves (default {d.budget_minutes:g})")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--data", help="text file or folder (default: this Python's stdlib sources)")
    p.add_argument("--out", help="study folder (default runs/study-<timestamp>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the study in --out from its journal (its configuration wins; the budget may be raised)")
    p.add_argument("--force", action="store_true", help="replace an existing non-empty --out")
    p.set_defaults(func=study)


def study(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainprof.errors import InputError
    from trainprof.jobs.study import STAGES, StudyConfig, start

    cfg = StudyConfig(preset=args.preset, device=args.device, micro_batch=args.micro_batch, seq_len=args.seq_len,
                      dtype=args.dtype, steps=args.steps, warmup_steps=args.warmup_steps,
                      eval_batches=args.eval_batches, profile_steps=args.profile_steps, tune_steps=args.tune_steps,
                      verify_trials=args.verify_trials,
                      knobs=tuple(k.strip() for k in args.knobs.split(",") if k.strip()) if args.knobs else None,
                      min_gain=args.min_gain, seed=args.seed, data=args.data,
                      **({} if args.budget_minutes is None else {"budget_minutes": args.budget_minutes}))
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
    con.print(f"wrote {out / 'report.md'} and {out / 'report.html'} (records: "
              + ", ".join(doc.get("records", {}).values()) + ")", markup=False, soft_wrap=True)
