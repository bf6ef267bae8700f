"""Overhead of trainprof.Monitor against the same loop without it, in one process.

Both loops train the same model on the same batches and read the loss every step (as any
loop that logs does: one host sync per step). Trials alternate monitored/unmonitored so
drift (thermal, other tenants) hits both; we report the median of the per-trial ratios.

    python benchmarks/monitor_overhead.py [--device auto] [--trials 7] [--steps 10]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

VERSION = 1


def main() -> int:
    from _common import TinyLoop, environment, loop_arguments, write_json
    from trainprof import Monitor
    from trainprof.backends import get_backend, resolve_device

    ap = loop_arguments(__doc__, steps=10, out="benchmarks/results/monitor_overhead.json")
    a = ap.parse_args()

    device = resolve_device(a.device)
    loop = TinyLoop(device, a.preset, a.micro_batch, a.seq_len)
    model, opt, batches, sync = loop.model, loop.opt, loop.batches, loop.sync

    def plain(steps: int) -> float:
        sync()
        t0 = time.perf_counter()
        for i in range(steps):
            xb, yb = batches[i % 4]
            xb, yb = xb.to(device), yb.to(device)
            loss = model(xb, yb)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            loss.item()  # the per-step sync a logging loop has anyway
        sync()
        return time.perf_counter() - t0

    backend = get_backend(device)
    mon = Monitor(backend, tokens_per_step=a.micro_batch * a.seq_len, flops_per_step=1.0,
                  peak_tflops=1.0)

    def monitored(steps: int) -> float:
        return loop.timed(mon, steps)

    plain(3), monitored(3)  # warm-up both paths
    ratios, t_plain, t_mon = [], [], []
    for trial in range(a.trials):
        order = (plain, monitored) if trial % 2 == 0 else (monitored, plain)
        r = {f.__name__: f(a.steps) for f in order}
        t_plain.append(r["plain"] / a.steps)
        t_mon.append(r["monitored"] / a.steps)
        ratios.append(r["monitored"] / r["plain"])

    # The Monitor's own cost, isolated: empty phases, nothing else in the step.
    empty = Monitor(backend, tokens_per_step=1, flops_per_step=1.0, peak_tflops=1.0)
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        with empty.step() as s:
            for p in ("data", "h2d", "forward", "backward", "optimizer"):
                with s.phase(p):
                    pass
    bookkeeping_us = (time.perf_counter() - t0) / n * 1e6

    med = statistics.median(ratios)
    step_s = statistics.median(t_plain)
    result = {
        "benchmark": "monitor_overhead", "version": VERSION, "env": environment(device),
        "config": vars(a), "trials": a.trials,
        "step_s_plain_median": step_s, "step_s_monitored_median": statistics.median(t_mon),
        "ratio_median": med, "ratio_min": min(ratios), "ratio_max": max(ratios),
        "overhead_pct_median": 100 * (med - 1),
        "bookkeeping_us_per_step": bookkeeping_us,
        "bookkeeping_pct_of_step": 100 * bookkeeping_us / 1e6 / step_s,
    }
    print(f"device {result['env']['device']} ({device}), {a.preset} mb={a.micro_batch} T={a.seq_len}, "
          f"{a.trials} trials x {a.steps} steps")
    print(f"{'':28}{'median':>12}{'min':>10}{'max':>10}")
    print(f"{'step time, plain (ms)':28}{1e3 * step_s:>12.2f}{1e3 * min(t_plain):>10.2f}{1e3 * max(t_plain):>10.2f}")
    print(f"{'step time, monitored (ms)':28}{1e3 * statistics.median(t_mon):>12.2f}"
          f"{1e3 * min(t_mon):>10.2f}{1e3 * max(t_mon):>10.2f}")
    print(f"{'monitored / plain':28}{med:>12.4f}{min(ratios):>10.4f}{max(ratios):>10.4f}")
    print(f"Monitor bookkeeping alone: {bookkeeping_us:.1f} µs/step = "
          f"{result['bookkeeping_pct_of_step']:.4f}% of a {1e3 * step_s:.1f} ms step")
    write_json(a.out, result)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
