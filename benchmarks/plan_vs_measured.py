"""`trainprof plan`'s estimate beside the measured peak, on CPU, for docs/memory.md.

    python benchmarks/plan_vs_measured.py [--out benchmarks/results/plan_vs_measured.json] [--only TEXT]

Each configuration of the tiny preset is measured as `trainprof memory` measures it (a probe:
two training steps in a fresh process, resident memory above a baseline taken before the model
exists, glibc's 64 KiB mmap threshold) and planned by analysis/plan with jobs/plan_check.py's
stated CPU runtime constant. The FSDP rows run on 2 gloo ranks (jobs/memory_ranks.py) and
compare the highest rank's peak with the plan for dp 2, FSDP full shard. Prints a Markdown table; writes the rows and an environment header.
Run with the machine otherwise quiet: RSS does not depend on load, but the probes' time does.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, write_json  # noqa: E402


def configurations():
    from trainprof.workload.config import TrainConfig

    base = TrainConfig(preset="tiny", device="cpu", dtype="fp32").resolved()
    fsdp = replace(base, strategy="fsdp")
    return [
        ("fp32, micro-batch 16 × 256", base),
        ("bf16 autocast", replace(base, dtype="bf16")),
        ("activation checkpointing", replace(base, activation_checkpointing=True)),
        ("bf16 + checkpointing", replace(base, dtype="bf16", activation_checkpointing=True)),
        ("micro-batch 4 × 64 (optimizer-step peak)", replace(base, micro_batch=4, seq_len=64)),
        ("micro-batch 32", replace(base, micro_batch=32)),
        ("fused AdamW", replace(base, optimizer="fused")),
        ("manual attention (scores kept)", replace(base, attention="manual")),
        ("gradient accumulation 4 × 4", replace(base, micro_batch=4, grad_accum=4)),
        ("bf16 + checkpointing, micro-batch 8 × 128", replace(base, dtype="bf16", activation_checkpointing=True,
                                                             micro_batch=8, seq_len=128)),
        ("selective recompute, manual attention", replace(base, attention="manual", activation_checkpointing=True,
                                                          recompute="selective")),
        ("Adafactor", replace(base, optimizer="adafactor")),
        ("FSDP, 2 gloo ranks (per rank)", fsdp, 2),
        ("FSDP + checkpointing + fused AdamW, 2 gloo ranks", replace(fsdp, activation_checkpointing=True,
                                                                     optimizer="fused"), 2),
        ("FSDP + bf16 autocast + checkpointing + fused AdamW, 2 gloo ranks",
         replace(fsdp, dtype="bf16", activation_checkpointing=True, optimizer="fused"), 2),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/plan_vs_measured.json")
    ap.add_argument("--only", default="", help="run only the configurations whose name contains TEXT")
    args = ap.parse_args()
    from trainprof.jobs.memory_study import _write_corpus
    from trainprof.jobs.plan_check import CPU_RUNTIME_BYTES, compare

    rows = []
    with tempfile.TemporaryDirectory(prefix="plan-vs-measured-") as tmp:
        corpus = str(_write_corpus(None, Path(tmp) / "corpus.txt"))
        for name, cfg, *ranks in configurations():
            if args.only.lower() not in name.lower():
                continue
            r = compare(cfg, corpus=corpus, ranks=ranks[0] if ranks else 1)
            rows.append({"name": name, **r})
            print(f"{name}: planned {r['planned_bytes'] / 2**20:.1f} MiB, measured {r['measured_bytes'] / 2**20:.1f} "
                  f"MiB ({100 * r['error']:+.1f}%)", file=sys.stderr, flush=True)
    print("| configuration | planned | measured | plan − measured | peak in |")
    print("|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['name']} | {r['planned_bytes'] / 2**20:.1f} MiB | {r['measured_bytes'] / 2**20:.1f} MiB | "
              f"{100 * r['error']:+.1f}% | {r['planned_phase']} |")
    worst = max(abs(r["error"]) for r in rows)
    print(f"\nworst |error| {100 * worst:.1f}% over {len(rows)} configurations; CPU runtime constant "
          f"{CPU_RUNTIME_BYTES / 2**20:.0f} MiB; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    write_json(args.out, {"benchmark": "plan_vs_measured", "version": 1, "environment": environment("cpu"),
                          "cpu_runtime_bytes": CPU_RUNTIME_BYTES, "rows": rows, "worst_abs_error": worst})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
