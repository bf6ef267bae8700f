"""`trainprof tune`: run the optimisation ladder on the reference workload."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from trainprof.errors import UsageError


# The TrainConfig fields a tune's baseline is made of (flags generated from them); the knobs
# change the others. Order = the order of tune.json's "config".
BASE_FIELDS = ("preset", "device", "micro_batch", "seq_len", "dtype", "attention", "optimizer", "data", "seed",
               "steps", "warmup_steps", "eval_batches")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.workload.config import TrainConfig

    p = sub.add_parser("tune", help="try the known optimisations one by one; keep what is faster and still learns",
                       description="Measure a baseline, climb the optimisation ladder one knob at a time (keeping "
                       "each that is measurably faster and passes the accuracy guard), then verify the best "
                       "combination against the baseline.")
    add_flags(p, TrainConfig, only=BASE_FIELDS, defaults={"dtype": "fp32", "steps": 10, "eval_batches": 4},
              helps={"dtype": "the baseline's dtype (mixed precision is a knob)", "steps": "steps per trial",
                     "warmup_steps": "warm-up steps per trial, excluded from its timing",
                     "eval_batches": "validation batches per trial"})
    p.add_argument("--knobs", help="comma-separated subset of the catalogue, in order (default: the speed ladder)")
    p.add_argument("--min-gain", type=float, default=0.03, help="keep a knob only if ≥ this much faster (default 0.03)")
    p.add_argument("--verify-trials", type=int, default=3, help="best-vs-baseline pairs at the end (default 3)")
    p.add_argument("--budget-minutes", type=float, default=15.0, help="stop trying knobs after this (default 15)")
    p.add_argument("--out", help="output folder (default runs/tune-<timestamp>)")
    p.add_argument("--resume", action="store_true", help="continue the tune in --out from its journal")
    p.add_argument("--force", action="store_true", help="replace an existing non-empty --out (at the start)")
    p.add_argument("--json", action="store_true", help="print tune.json to stdout")
    p.add_argument("--no-report", action="store_true", help="do not write report.html and report.md")
    p.set_defaults(func=tune)


def _base_config(args: argparse.Namespace) -> dict:
    from trainprof.backends import resolve_device
    from trainprof.flags import from_args
    from trainprof.workload.config import TrainConfig

    cfg = from_args(TrainConfig, args, only=BASE_FIELDS).resolved()
    if args.data is not None and not Path(args.data).exists():
        from trainprof.errors import InputError

        raise InputError(f"--data {args.data}: no such file or folder")
    base = {k: getattr(cfg, k) for k in BASE_FIELDS if k not in ("device", "data")}
    base["device"] = resolve_device(cfg.device)
    if args.data is not None:
        base["data"] = args.data
    return base


def tune(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from trainprof import atomic
    from trainprof.report.tune_terminal import print_ladder, write_chart
    from trainprof.tune import KNOBS, run_ladder
    from trainprof.tune.catalogue import by_name
    from trainprof.tune.journal import Journal
    from trainprof.tune.reference import run_trial

    if args.budget_minutes <= 0 or args.steps < 2 or args.verify_trials < 0 or args.min_gain < 0:
        raise UsageError("tune: --budget-minutes > 0, --steps ≥ 2, --verify-trials ≥ 0, --min-gain ≥ 0")
    if args.warmup_steps >= args.steps:
        raise UsageError(f"--warmup-steps {args.warmup_steps} must be below --steps {args.steps}")
    knobs = by_name(args.knobs.split(",")) if args.knobs else tuple(k for k in KNOBS if k.speed)
    if args.out and not args.resume:  # before the device is touched: a bad --out costs nothing
        atomic.check_out(args.out, force=args.force)
    base = _base_config(args)
    if args.resume:
        if not args.out or not (Path(args.out) / "journal.jsonl").exists():
            raise UsageError("--resume needs --out DIR holding the journal.jsonl of an earlier tune")
        out = Path(args.out)
    else:
        out = Path(args.out) if args.out else atomic.fresh_dir("tune-{stamp}")
        if out.exists() and any(out.iterdir()) and not args.force:
            raise UsageError(f"--out {out}: exists and is not empty (use --resume to continue a tune there, "
                             "or --force to replace it)")
        if args.force:
            atomic.clear_for_force(out)
        out.mkdir(parents=True, exist_ok=True)
    atomic.clean_stale(out)  # trial folders of a tune killed with kill -9
    journal = Journal(out / "journal.jsonl")
    device_kind = base["device"].split(":")[0]

    err = Console(stderr=True)
    total = 2 + len(knobs) + 2 * args.verify_trials
    progress = Progress(TextColumn("[bold]tune[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=True)
    task = progress.add_task("baseline", total=total)

    def on_trial(entry: dict) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task, advance=1, description=entry["knob"])

    try:
        runner = functools.partial(run_trial, workdir=out)  # trial folders inside --out, cleaned on restart
        result = run_ladder(runner, knobs, base, device=device_kind, journal=journal,
                            min_gain=args.min_gain, budget_s=60 * args.budget_minutes,
                            verify_trials=args.verify_trials, on_trial=on_trial)
    finally:
        if progress.live.is_started:
            progress.stop()
    if "error" in result:
        raise UsageError(f"tune: {result['error']}")
    from trainprof.tune.record import tune_document

    doc = tune_document(base, result)
    atomic.write_text(out / "tune.json", atomic.dumps(doc) + "\n")
    chart = write_chart(doc, out)
    from trainprof.report.files import auto_report

    report_note = auto_report(out, enabled=not args.no_report)
    if args.json:
        print(atomic.dumps(doc))
    else:
        con = Console()
        print_ladder(doc, con)
        con.print(f"wrote {out / 'tune.json'}, {out / 'journal.jsonl'}" + (f" and {chart}" if chart else ""))
        if report_note:
            con.print(report_note, markup=False, soft_wrap=True)
    return 0
