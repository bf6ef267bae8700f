"""The training loop `profile_overhead.py` runs bare and under `trainprof profile`.

A user's loop, not instrumented: the reference GPT model, fixed batches, AdamW, and
`loss.item()` every step (the sync any loop that logs has). It times each step itself
(perf_counter, from the end of one step to the end of the next) and writes the times to
--times, so the two runs are compared on the program's own clock, step by step.

    python benchmarks/profile_overhead_loop.py --steps 40 --times out.json
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def main() -> None:
    from trainprof.workload.config import TrainConfig
    from trainprof.workload.model import GPT

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    ap.add_argument("--times", required=True)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    cfg = TrainConfig(preset=a.preset, micro_batch=a.micro_batch, seq_len=a.seq_len).resolved()
    torch.manual_seed(0)
    model = GPT(cfg.model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, 256, (a.micro_batch, a.seq_len))
    batches = [(x.roll(i, 1), x.roll(i + 1, 1)) for i in range(4)]
    times = []
    t0 = time.perf_counter()
    for i in range(a.steps):
        xb, yb = batches[i % 4]
        loss = model(xb, yb)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        t0 = t1
    with open(a.times, "w") as f:
        json.dump(times, f)


if __name__ == "__main__":
    main()
