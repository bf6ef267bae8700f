"""`trainprof plan`: memory per GPU and time to train for a model and layout, by formula."""

from __future__ import annotations

import argparse

from trainprof.controls import visible


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.plan_config import PlanJob

    p = sub.add_parser(
        "plan", help="before spending GPUs: memory per GPU for any model and layout, what fits, time to train",
        description="Estimate one GPU's training memory (weights, gradients, optimizer states, activations "
        "after Korthikanti et al. 2022, temporaries, CUDA/NCCL runtime) for a preset, a Hugging Face "
        "config.json or a shape given by flags, under a layout (dp/tp/pp, ZeRO or FSDP, activation "
        "checkpointing, offload, dtype, optimizer); the largest micro-batch that fits the device; the "
        "layouts of the same GPUs that fit, cheapest first; and with --tokens the time to train. "
        "No GPU is touched; docs/memory.md gives every formula and how it was checked against measured peaks.")
    p.set_defaults(func=plan)
    add_flags(p, PlanJob)


def plan(args: argparse.Namespace) -> int:
    from trainprof.report.console import console

    from trainprof import atomic, jsontext, outdir
    from trainprof.flags import build
    from trainprof.jobs.plan import plan as make_plan
    from trainprof.jobs.plan_config import PlanJob

    job = build(PlanJob, args)
    out = outdir.check_out(job.output.out, force=job.output.force) if job.output.out else None
    record = make_plan(job)
    text = jsontext.dumps(record) + "\n"
    if out is not None:
        with atomic.staged_dir(out, force=job.output.force) as stage:
            atomic.write_text(stage / "plan.json", text)
    if job.output.json:
        print(text, end="")
        return 0
    from trainprof.report.plan_terminal import print_plan

    con = console()
    print_plan(record, con)
    if out is not None:
        con.print(visible(f"wrote {out / 'plan.json'}"), markup=False)
    return 0
