"""`trainprof memory`: analytic vs measured training memory, largest micro-batch, memory ladder."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainprof.controls import visible
from trainprof.jobs.memory_config import MAX_SIZE, parse_size  # noqa: F401 - where tests and fuzzers find them

def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.memory_config import MemoryJob

    p = sub.add_parser(
        "memory", help="training memory: analytic breakdown vs measured peak, largest micro-batch, memory ladder",
        description="Break training memory down by formula (weights, gradients, AdamW states, activations "
        "per Korthikanti et al. 2022, logits), measure the real peak of a few training steps, find the "
        "largest micro-batch that fits (doubling, then bracketing; OOMs caught), and climb the memory "
        "ladder (gradient accumulation, selective and full recompute, AdamW variants, bf16, FSDP on 2 ranks, "
        "Adafactor; CPU offload planned for a GPU), each rung beside `plan`'s estimate. Each measurement "
        "runs in a fresh process (one per rank).")
    p.set_defaults(func=memory)
    add_flags(p, MemoryJob)  # the workload's fields, the search and ladder, the output (jobs/memory_config.py)


def _out_dir(arg: str | None, force: bool = False) -> Path:
    """Checked before the study (a parent that is a file, a non-empty folder without --force,
    a file trainprof did not write with it: now, not after minutes of probes)."""
    from trainprof import outdir

    return outdir.out_or_fresh(arg, force=force, name="{stamp}-memory")


def memory(args: argparse.Namespace) -> int:
    from trainprof.report.console import console

    from trainprof import atomic, jsontext
    from trainprof.flags import build
    from trainprof.jobs.memory_config import DEFAULT_CPU_LIMIT, MemoryJob

    job = build(MemoryJob, args)
    if job.argv:
        return _program(job)
    cfg = job.train.resolved()
    out = _out_dir(job.output.out, job.output.force)

    from trainprof.backends import resolve_device
    from trainprof.jobs.memory_study import study_memory

    limit, source = job.memory_limit, "--memory-limit"
    if limit is None and resolve_device(cfg.device) == "cpu":
        limit, source = parse_size(DEFAULT_CPU_LIMIT), "the CPU default; --memory-limit to change"

    progress, on_probe = _progress(console(stderr=True))
    try:
        result = study_memory(cfg, limit_bytes=limit, limit_source=source, search=job.search, ladder=job.ladder,
                              steps=cfg.steps, on_probe=on_probe)
    finally:
        if progress.live.is_started:  # stop() on a never-started bar still prints a newline
            progress.stop()
    text = jsontext.dumps(result) + "\n"
    path = out / "memory.json"
    with atomic.staged_dir(out, force=job.output.force) as stage:  # the folder appears complete, with its manifest
        atomic.write_text(stage / "memory.json", text)
    if job.output.json:
        print(text, end="")
    else:
        from trainprof.report.memory_terminal import print_memory

        con = console()
        print_memory(result, con)
        con.print(visible(f"wrote {path}"), markup=False)  # a path is shown, never acted on
    return 0


def _program(job) -> int:  # noqa: ANN001 - MemoryJob
    """`trainprof memory -- COMMAND`: the program's measured memory and its knobs (jobs/memory_program.py)."""
    from trainprof.report.console import console
    from trainprof.report.fit import FitTable

    from trainprof import atomic, jsontext
    from trainprof.jobs.memory_program import measure, table_rows

    out = _out_dir(job.output.out, job.output.force)
    err = console(stderr=True)

    def on_rung(name: str, i: int, n: int) -> None:
        err.print(visible(f"trainprof memory: measurement {i} of {n} ({name})"), markup=False)

    with atomic.staged_dir(out, force=job.output.force) as stage:
        doc = measure(job, stage, on_rung=on_rung)
    if job.output.json:
        print(jsontext.dumps(doc))
        return 0
    what = "process RSS" if doc["source"] == "process_rss" else "CUDA allocated"
    t = FitTable(title=f"Memory of your program ({what}; the step's boundaries sampled, the peak measured)",
              title_justify="left")
    for col in ("knob", "peak", "start", "forward end", "backward end", "step end", "vs base", "fits / why not"):
        t.add_column(col, justify="left" if col in ("knob", "fits / why not") else "right")
    for row in table_rows(doc):
        t.add_row(*(visible(c) for c in row))
    con = console()
    con.print(t)
    con.print(visible(f"not measured: {doc['not_applied']}"), markup=False)
    con.print(visible(f"wrote {out / 'memory.json'}"), markup=False)
    return 0


def _progress(err):  # a rich Console → (Progress, the on_probe callback)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn("[bold]memory[/] probe {task.completed:.0f}: {task.description}"),
                        TimeElapsedColumn(), console=err, transient=True)
    task = progress.add_task("", total=None)

    def on_probe(stage, config, result):
        # started at the first probe, so a setup error prints one clean line, no bar debris
        if not progress.live.is_started:
            progress.start()
        if result is None:
            what = f"{stage}: micro-batch {config.micro_batch}"
            if config.grad_accum > 1:
                what += f" × {config.grad_accum}"
            flags = [config.dtype, f"{config.optimizer} AdamW"]
            if config.activation_checkpointing:
                flags.append("checkpointing")
            progress.update(task, description=f"{what} ({', '.join(flags)})")
        else:
            progress.advance(task)

    return progress, on_probe
