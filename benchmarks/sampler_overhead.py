"""Cost of the system sampler (collect/sampler.py) on step time, in one process.

Two Monitors drive the same model on the same batches, one with the background sampler
(the default sensors of the device: psutil host, RAPL, NVML on CUDA) and one without;
trials alternate so drift hits both, and we report the median of the per-trial ratios.
A second pass repeats it at a 10× shorter interval to make any cost visible, and the cost
of one sample (all sensors) is timed alone.

    python benchmarks/sampler_overhead.py [--device auto] [--trials 7] [--steps 20]
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
    from trainprof.backends.sensors import default_sensors
    from trainprof.collect.sampler import DEFAULT_INTERVAL_S, SystemSampler

    ap = loop_arguments(__doc__, steps=20, out="benchmarks/results/sampler_overhead.json")
    a = ap.parse_args()

    device = resolve_device(a.device)
    backend = get_backend(device)
    loop = TinyLoop(device, a.preset, a.micro_batch, a.seq_len)
    tokens = a.micro_batch * a.seq_len

    def monitor(interval: float | None) -> Monitor:
        sampler = SystemSampler(default_sensors(backend.kind), interval) if interval else None
        return Monitor(backend, tokens_per_step=tokens, flops_per_step=1.0, peak_tflops=1.0, sampler=sampler)

    results = {}
    for interval in (DEFAULT_INTERVAL_S, DEFAULT_INTERVAL_S / 10):
        plain, sampled = monitor(None), monitor(interval)
        loop.timed(plain, 3), loop.timed(sampled, 3)  # warm-up both (and start the sampler)
        ratios, t_plain, t_sampled = [], [], []
        for trial in range(a.trials):
            order = ((plain, t_plain), (sampled, t_sampled))
            for mon, acc in (order if trial % 2 == 0 else order[::-1]):
                acc.append(loop.timed(mon, a.steps) / a.steps)
            ratios.append(t_sampled[-1] / t_plain[-1])
        sampled.stop_system()
        n_samples = len(sampled.sampler.samples)
        results[f"{interval:g}"] = {
            "interval_s": interval, "samples_taken": n_samples,
            "step_s_plain_median": statistics.median(t_plain),
            "step_s_sampled_median": statistics.median(t_sampled),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
        }

    probe = SystemSampler(default_sensors(backend.kind), 1.0)
    probe.sample_now()
    n = 200
    t0 = time.perf_counter()
    for _ in range(n):
        probe.sample_now()
    sample_us = (time.perf_counter() - t0) / n * 1e6

    result = {"benchmark": "sampler_overhead", "version": VERSION, "env": environment(device),
              "config": vars(a), "sensors": [s.name for s in probe.sensors],
              "unavailable": probe.unavailable, "one_sample_us": sample_us, "intervals": results}
    print(f"device {result['env']['device']} ({device}), {a.preset} mb={a.micro_batch} T={a.seq_len}, "
          f"{a.trials} trials x {a.steps} steps; sensors {', '.join(result['sensors'])}")
    print(f"{'interval':>10}{'samples':>9}{'plain ms':>10}{'sampled ms':>12}{'ratio med':>11}{'min':>8}{'max':>8}")
    for r in results.values():
        print(f"{r['interval_s']:>9g}s{r['samples_taken']:>9}{1e3 * r['step_s_plain_median']:>10.2f}"
              f"{1e3 * r['step_s_sampled_median']:>12.2f}{r['ratio_median']:>11.4f}{r['ratio_min']:>8.4f}"
              f"{r['ratio_max']:>8.4f}")
    print(f"one sample of all sensors: {sample_us:.0f} µs "
          f"({100 * sample_us / 1e6 / DEFAULT_INTERVAL_S:.3f}% of one core at the {DEFAULT_INTERVAL_S:g} s default)")
    write_json(a.out, result)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
