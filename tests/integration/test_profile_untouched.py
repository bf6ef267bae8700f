"""The program cannot tell it runs under `trainprof profile` (ARCHITECTURE.md, "Inside the
user's program"; issue #37), each promise checked on a planted program run plainly and
profiled, in fresh processes:

* its global random streams, its own global optimizer and module hooks (one registered in
  the middle of training): every line it prints is the same, bit for bit;
* trainprof's buffers are not in its memory: the profiled peak RSS is within a stated bound
  of the plain one (the CPU peak's 2 × 256 MiB copy buffers were in it: 868.6 vs 361.5 MiB);
* Ctrl-C at 6 random moments (its own SIGINT, wherever it lands: its code, torch's, the
  agent's hooks, the peak check, the trace write): it dies of its KeyboardInterrupt exactly
  as without trainprof (exit 130, never 1), with no "Exception ignored"/"lost sys.stderr"
  noise, and trainprof says it was interrupted: in one line with no advice to run longer when
  nothing was measured, or as the run folder's status when the window was complete.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "profile_scripts"
pytestmark = pytest.mark.slow  # fresh processes: the program, and trainprof around it
FAST = ["--warmup", "2", "--steps", "3", "--profile-steps", "1", "--system-interval", "0", "--no-report"]
RSS_BOUND_MIB = 96  # FlopCounterMode, torch.profiler's buffers and the agent's records on this program


def _env(tmp_path: Path) -> dict[str, str]:
    # a fresh peak cache: with a warm one, the old in-process check drew from the RNG only sometimes
    return {**os.environ, "TRAINPROF_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}


def _profiled(tmp_path: Path, script: str, *args: str, out: str = "prof") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainprof", "profile", *FAST, "--out", str(tmp_path / out), "--",
                           sys.executable, str(SCRIPTS / script), *args],
                          capture_output=True, text=True, env=_env(tmp_path), timeout=300)


def _peak_rss_mib(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    """Run `cmd` under a Python wrapper that reports its child's ru_maxrss (the program's own peak)."""
    code = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
            "print('RSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
            "sys.exit(p.returncode)")
    done = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, env=env, timeout=300)
    kib = int(re.findall(r"^RSS (\d+)$", done.stderr, re.M)[-1])
    return done, kib / 1024


def test_same_output_bit_for_bit_with_its_own_hooks_and_rng(tmp_path):
    plain = subprocess.run([sys.executable, str(SCRIPTS / "faithful.py")], capture_output=True, text=True,
                           env=_env(tmp_path), timeout=300)
    prof = _profiled(tmp_path, "faithful.py")
    assert plain.returncode == prof.returncode == 0, prof.stderr[-3000:]
    assert len(plain.stdout.splitlines()) == 24 and "late_post', 17" in plain.stdout.splitlines()[-1]
    assert prof.stdout == plain.stdout
    assert "OrderedDict mutated" not in prof.stderr and "Traceback" not in prof.stderr


def test_trainprof_buffers_are_not_in_the_programs_memory(tmp_path):
    env = _env(tmp_path)
    script = [sys.executable, str(SCRIPTS / "faithful.py")]
    _, plain = _peak_rss_mib(script, env)
    # the child of `trainprof profile` is the program; RUSAGE_CHILDREN covers it (and the peak check's
    # own process, a sibling: so the program itself is not where the 2 x 256 MiB live) -> the max of them
    done = subprocess.run([sys.executable, "-m", "trainprof", "profile", *FAST, "--out", str(tmp_path / "p"), "--",
                           *script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    peak = json.loads((tmp_path / "p" / "run.json").read_text())["summary"]["peak_memory_bytes"] / 2**20
    assert peak - plain < RSS_BOUND_MIB, (peak, plain)  # it was +507 MiB with the copy buffers inside


def test_ctrl_c_anywhere_ends_the_program_as_without_trainprof(tmp_path):
    rng = random.Random(37)
    # 6 moments, spread over the program's life (20 cost 53 s of the 10-minute suite, 8 cost 53 s
    # of it again once the suite grew; the window's edges, where Ctrl-C is most delicate, get every
    # 4th run's trace)
    delays = [round(rng.uniform(0.02, 2.0), 3) for _ in range(6)]
    plain = subprocess.run([sys.executable, str(SCRIPTS / "interrupted.py"), "--after", "0.5"],
                           capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert plain.returncode == -2 and plain.stderr.rstrip().endswith("KeyboardInterrupt")
    failures = []
    for pair in range(0, len(delays), 2):  # two at a time: the two cores
        # every 4th run checks the CPU peak in its child process and writes a trace (moments for Ctrl-C to
        # land in); the others are given the peaks and record no trace, to keep the runs affordable
        cheap = ["--peak-tflops", "1", "--peak-bandwidth-gbs", "10", "--profile-steps", "0"]
        procs = [subprocess.Popen([sys.executable, "-m", "trainprof", "profile", *FAST, *([] if i % 4 == 0 else cheap),
                                   "--out", str(tmp_path / f"s{i}"), "--", sys.executable,
                                   str(SCRIPTS / "interrupted.py"),
                                   "--after", str(delays[i])], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=_env(tmp_path))
                 for i in range(pair, min(pair + 2, len(delays)))]
        for i, p in zip(range(pair, pair + 2), procs):
            _, err = p.communicate(timeout=300)
            ours = [line for line in err.splitlines() if line.startswith("trainprof:")]
            run = tmp_path / f"s{i}" / "run.json"
            if run.is_file():  # interrupted after the window: the folder says so
                told = json.loads(run.read_text())["status"] == "interrupted" and "interrupted, exit code -2" in err
            else:  # before: one line says so, with no advice to run longer
                told = (len(ours) == 1 and "interrupted" in ours[0] and "more steps" not in ours[0]
                        and "was not loaded" not in ours[0])
            bad = (p.returncode != 130 or "Exception ignored" in err or "lost sys.std" in err
                   or "KeyboardInterrupt" not in err or not told)
            if bad:
                failures.append((delays[i], p.returncode, ours, err[-800:]))
    assert not failures, failures
