"""The local engine's workers do not inherit a parent's torch thread pools (jobs/engines.py)."""

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.slow  # torch and a process pool in a fresh process
def test_local_engine_works_after_the_parent_ran_torch(tmp_path):
    # A forked child of a process whose OpenMP pool has run waits forever in its first
    # matmul; this script did exactly that (the test hung) before the rule.
    # Nor may the pool start the process's one forkserver: the memory probes' server preloads
    # torch and the trainer, and a bare server started first left each probe importing them.
    (tmp_path / "work.py").write_text(textwrap.dedent("""
        import torch

        def matmul_sum(n):
            torch.set_num_threads(2)
            a = torch.ones(n, n)
            return float((a @ a).sum())
    """))
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import torch
        torch.set_num_threads(2)
        torch.ones(256, 256) @ torch.ones(256, 256)  # the parent's pool is now running
        from trainprof.jobs.engines import EngineConfig, run_map
        from work import matmul_sum
        print(run_map(matmul_sum, [(64,), (32,)], EngineConfig("local", 2, None)))
        from multiprocessing import forkserver
        print(forkserver._forkserver._forkserver_pid)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    result, server = out.stdout.strip().splitlines()
    assert result == "[262144.0, 32768.0]"  # 64³ and 32³: each of n² entries sums n ones
    assert server == "None"  # no forkserver started
