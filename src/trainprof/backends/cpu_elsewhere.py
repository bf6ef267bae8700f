"""The CPU's matmul and copy peaks measured in a separate process, for `trainprof profile`.

Inside the user's program trainprof must not be seen (ARCHITECTURE.md, "Inside the user's
program"). Measuring the peaks there did two things a user saw (issue #37): the matmul
benchmark's `torch.randn` drew from torch's *global* generator, so nanoGPT's batches and
losses differed from a plain run from iteration 3 on; and the copy benchmark's 2 × 256 MiB
buffers stayed in the program's peak RSS (868.6 MiB reported, 361.5 MiB plain).

So the agent runs this module as a child (`python -m trainprof.backends.cpu_elsewhere`) with
the program's intra-op thread count, while the program waits in the agent's hook (the CPU is
the child's, as it was the program's own benchmark's): the child measures, or checks the
cache (backends/cpu.py, cpu_peak.py), and prints the Measurements as JSON; the agent seeds
its per-process table with them (cpu._SEEN), so the Monitor reads the same values with no
draw, no buffer and no benchmark in the program. Cost: one Python start with torch (~1-2 s,
inside the FLOP-counted warm-up step, not in any measured step), unless another process
measured or checked the same peaks less than two minutes ago (cpu_peak.recent: a tune's
trials, a study's profiles, the ranks of a job): then the cache file is read and no child runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

TIMEOUT_S = 120.0  # a cold measurement is ~3 s a dtype on 2 loaded cores; a hang must not hold the program


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m trainprof.backends.cpu_elsewhere", allow_abbrev=False)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--dtypes", default="fp32")
    ap.add_argument("--bandwidth", action="store_true")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from trainprof.backends import cpu

    out = [cpu.matmul_peak(d).to_dict() for d in dict.fromkeys(args.dtypes.split(","))]
    if args.bandwidth:
        out.append(cpu.bandwidth_peak().to_dict())
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


def prefetch(dtypes: tuple[str, ...], bandwidth: bool, threads: int) -> str | None:
    """Measure (or check) the peaks in a child process and seed this process's table with them;
    None, or why not (then nothing is measured here: the caller reports no MFU)."""
    from trainprof.backends import cpu, cpu_peak

    # measured or checked by another process seconds ago (the tune's previous trial, the other
    # ranks): taken as it is, with no process of our own (cpu_peak.recent)
    path = cpu_peak.cache_path()
    keys = [cpu.matmul_key(d) for d in dtypes] + ([cpu.bandwidth_key()] if bandwidth else [])
    found = [cpu_peak.recent(k, path) for k in keys]
    if all(m is not None for m in found):
        for m in found:
            cpu._SEEN[(str(path), m.key)] = m
        return None
    env = {k: v for k, v in os.environ.items() if k != "TRAINPROF_PROFILE"}  # the child is ours, not profiled
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([src, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    cmd = [sys.executable, "-m", "trainprof.backends.cpu_elsewhere", "--threads", str(threads),
           "--dtypes", ",".join(dtypes), *(["--bandwidth"] if bandwidth else [])]
    try:
        done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{type(e).__name__}: {e}"
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"exit code {done.returncode}: {tail}"
    try:
        for d in json.loads(done.stdout.strip().splitlines()[-1]):
            m = cpu_peak.Measurement(**d)
            cpu._SEEN[(str(path), m.key)] = m
    except (ValueError, TypeError, IndexError, KeyError) as e:
        return f"unreadable answer ({type(e).__name__}: {e})"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
