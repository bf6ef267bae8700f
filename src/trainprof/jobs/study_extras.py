"""The study's side files: the Nsight Compute plan for the baseline's top kernels (study.json
"ncu") and the reproduction files the assignment asks for (reproduce.sh, requirements.txt)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from trainprof import atomic
from trainprof.recordtypes.analysis import Rank
from trainprof.recordtypes.base import or_default


def ncu_plan(rank: Rank, cfg: dict[str, Any]) -> dict:
    """The Nsight Compute commands for the baseline's top kernels (analysis/cost/ncu.py), with the
    baseline's own `trainprof run` as the program. A CPU trace has no kernels: then the command
    filters on the profiled step's NVTX range of the same workload run on a GPU, and says so."""
    import shlex
    from dataclasses import replace

    from trainprof.analysis.cost.ncu import METRICS, SECTIONS, ncu_command
    from trainprof.jobs.ncu import NcuJob
    from trainprof.tune.reference import command, from_sparse

    run = from_sparse(cfg)
    program = command(replace(run, device=run.device if run.device.startswith("cuda") else "cuda", steps=4))
    kernels = [msgspec.to_builtins(k) for k in or_default(rank.top_kernels, [])
               if k.kind not in ("memcpy", "memset")][:NcuJob.top]
    if or_default(rank.has_gpu, False) and kernels:
        collect, export = ncu_command(kernels, or_default(rank.steps, 0) or 1, program, "study_ncu")
        return {"applies": True, "collect": collect, "export": export, "kernels": [k["name"] for k in kernels]}
    collect = ["ncu", "--target-processes", "all", "--nvtx", "--nvtx-include", "trainprof.step/",
               "--launch-count", "200"]
    for s in SECTIONS:
        collect += ["--section", s]
    collect += ["--metrics", ",".join(METRICS), "-o", "study_ncu", "--", *shlex.split(program)]
    return {"applies": False, "collect": shlex.join(collect),
            "export": "ncu --import study_ncu.ncu-rep --csv --page raw --print-units base > study_ncu.csv",
            "reason": "this trace ran on a CPU: Nsight Compute measures CUDA kernels only, so the roofline "
                      "below places operators by the FLOPs and bytes of their recorded shapes against this "
                      "machine's measured peaks; on a GPU, run the command (the kernels of the profiled step, "
                      "NVTX range trainprof.step) and `trainprof analyze TRACE --ncu study_ncu.csv`"}


def write_reports_extras(out: Path) -> None:
    """reproduce.sh and requirements.txt: the assignment asks for a runnable environment and
    the script that runs the code; both are written from the records."""
    import dataclasses

    from trainprof.tune.reference import command
    from trainprof.workload.config import TrainConfig

    names = {f.name for f in dataclasses.fields(TrainConfig)}
    from trainprof.bounded import load_object

    runs = {s: load_object(out / s / "run.json") for s in ("baseline", "optimised")
            if (out / s / "run.json").is_file()}
    lines = ["#!/bin/sh", "# The study's two profiled runs (trainprof study), one line each.", "set -e"]
    for s, run in runs.items():
        cfg = TrainConfig(**{k: v for k, v in run["config"].items() if k in names})  # not the derived fields
        lines.append(f"{command(cfg)} --profile --profile-steps 1 --out runs/{s}")
    atomic.write_text(out / "reproduce.sh", "\n".join(lines) + "\n")
    from trainprof import __version__

    env = (runs.get("baseline") or {}).get("environment") or {}
    torch_v = str(env.get("torch") or "").split("+")[0]
    # the versions the runs recorded; trainprof brings its own dependencies (pyproject.toml)
    req = [f"# Python {env.get('python') or '>= 3.10'}; install trainprof from its repository (pip install .)",
           f"torch=={torch_v}" if torch_v else "torch>=2.4", f"trainprof=={__version__}"]
    atomic.write_text(out / "requirements.txt", "\n".join(req) + "\n")
