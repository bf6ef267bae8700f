"""Start-up time of the commands a user types first (issue #43: `trainprof --version` and
`trainprof analyze --help` under 0.15 s), beside the interpreter's own floor (`python -c pass`),
measured as a user runs them: bytecode cached (the sandbox's PYTHONDONTWRITEBYTECODE=1 is unset
for the runs and the package is compiled first), each command run in turn, median of N rounds.

    python benchmarks/startup.py --rounds 15
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = {
    "python -c pass (floor)": [sys.executable, "-c", "pass"],
    "trainprof --version": [sys.executable, "-m", "trainprof", "--version"],
    "trainprof analyze --help": [sys.executable, "-m", "trainprof", "analyze", "--help"],
    "trainprof --help": [sys.executable, "-m", "trainprof", "--help"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    compileall.compile_dir(str(SRC / "trainprof"), quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    for _ in range(args.rounds):
        for name, cmd in COMMANDS.items():  # in turn: a load change hits every command alike
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - t0)
    floor = statistics.median(times["python -c pass (floor)"])
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, {args.rounds} rounds")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:28s} median {med * 1e3:6.1f} ms  (+{(med - floor) * 1e3:5.1f} ms over the floor)  "
              f"min {min(ts) * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
