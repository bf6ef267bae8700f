"""`trainprof memory -- COMMAND`: the user's own program's memory, measured, with the memory
knobs that apply to it (issue #38 item 4).

Each measurement is a fresh process of the unchanged command under `trainprof profile
--stop-after` (the tune trials' runner: jobs/tune_program.run_program_trial), a few steps
after `--warmup`: the peak (allocator peak on CUDA, process RSS on CPU: run.json's
summary.peak_memory_bytes) and the memory in use at the step's boundaries (profile.
memory_by_phase: at the start, when the backward begins (activations held), when it ends
(gradients), after the optimizer (its states); sampled at the boundaries, so a peak inside a
phase can be higher). The rungs: the baseline; each value of `--arg-knob`/`--env-knob` (the
program's own batch size, its own checkpointing flag: what the program exposes); bf16
autocast applied from outside (tune's knob). Each rung beside the baseline, and against
`--memory-limit` when one is given. What cannot be applied from outside without the
program's help (activation checkpointing of its layers, CPU offload, a smaller optimizer) is
said, not guessed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from trainprof import atomic, jsontext

SCHEMA = "trainprof.memory-program/1"
NOT_FROM_OUTSIDE = ("activation checkpointing of the program's layers (pass the program's own flag with --arg-knob), "
                    "CPU offload and a smaller optimizer (the program's code): not applied from outside")


def rungs(job: Any) -> list[tuple[str, Any]]:
    """(name, ProgramConfig or the reason it is skipped), baseline first."""
    from trainprof.tune.program import ProgramConfig, user_knobs

    out: list[tuple[str, Any]] = [("baseline", ProgramConfig())]
    for k in user_knobs(job.argv, job.program.arg_knob, job.program.env_knob):
        out.append((k.name, k.apply(ProgramConfig(), None)))
    if job.bf16:
        out.append(("bf16 autocast", ProgramConfig().with_knobs(autocast="bf16")))
    return out


def measure(job: Any, folder: Path, *, on_rung: Callable[[str, int, int], None] | None = None,
            runner: Callable[..., Any] | None = None) -> dict[str, Any]:
    """Measure every rung into memory.json in `folder`; returns the document."""
    from trainprof.jobs.tune_program import run_program_trial

    todo = rungs(job)
    rows: list[dict[str, Any]] = []
    base_peak = None
    for i, (name, cfg) in enumerate(todo):
        if on_rung is not None:
            on_rung(name, i + 1, len(todo))
        if isinstance(cfg, str):
            rows.append({"knob": name, "skipped": cfg})
            continue
        run = runner or run_program_trial
        r = run(cfg, argv=job.argv, warmup=job.program.warmup, steps=job.train.steps, workdir=folder,
                marker=job.program.step_marker)
        notes = r.notes or {}
        at = ((notes.get("memory_by_phase") or {}).get("bytes") or {}).values()
        # the peak is at least what a boundary saw (on CPU ru_maxrss and /proc's RSS are read at different moments)
        peak = max([r.peak_memory_bytes, *at]) if r.peak_memory_bytes is not None else None
        row: dict[str, Any] = {"knob": name, "ok": r.ok, "reason": r.reason, "peak_memory_bytes": peak,
                               "memory_by_phase": notes.get("memory_by_phase"),
                               "items_per_step": notes.get("tokens_per_step"), "step_time_s": r.step_time_s or None}
        if r.ok and name == "baseline":
            base_peak = peak
        if r.ok and base_peak and peak:
            row["vs_baseline"] = peak / base_peak
        if r.ok and job.memory_limit and peak:
            row["fits"] = peak <= job.memory_limit
        rows.append(row)
    if not rows or not rows[0].get("ok"):
        from trainprof.errors import UsageError

        raise UsageError(f"memory: the program's baseline measurement failed: {rows[0].get('reason') if rows else '?'}")
    facts = ((rows[0].get("memory_by_phase") or {}).get("source"))
    doc = {"schema": SCHEMA, "command": job.argv, "warmup": job.program.warmup, "steps": job.train.steps,
           "memory_limit_bytes": job.memory_limit, "source": facts, "rungs": rows, "not_applied": NOT_FROM_OUTSIDE}
    atomic.write_text(folder / "memory.json", jsontext.dumps(doc) + "\n")
    return doc


def table_rows(doc: dict[str, Any]) -> list[list[str]]:
    """The terminal table's cells: knob, peak, the four boundaries, vs baseline, fits."""
    from trainprof.report.formatting import size

    out = []
    for r in doc["rungs"]:
        if r.get("skipped") or not r.get("ok"):
            out.append([r["knob"], "—", "", "", "", "", "", r.get("skipped") or r.get("reason") or ""])
            continue
        at = (r.get("memory_by_phase") or {}).get("bytes") or {}
        cells = [size(at[k]) if k in at else "—" for k in ("start", "forward end", "backward end", "step end")]
        vs = f"{r['vs_baseline']:.2f}×" if r.get("vs_baseline") else ""
        fits = "" if "fits" not in r else ("fits" if r["fits"] else "over the limit")
        out.append([r["knob"], size(r["peak_memory_bytes"]), *cells, vs, fits])
    return out
