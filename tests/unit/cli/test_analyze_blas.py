"""`trainprof analyze` imports numpy with one OpenBLAS thread and leaves the environment as it was."""

import os
import subprocess
import sys

import pytest

CHECK = """
import os
from trainprof.cli.analyze import _numpy_without_blas_threads
_numpy_without_blas_threads()
import numpy
print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))
"""


def _run(env_extra: dict) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, check=True)
    threads, value = out.stdout.split()
    return int(threads), value


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or (os.cpu_count() or 1) < 2,
                    reason="counts threads in /proc; OpenBLAS starts none on one core")
def test_no_blas_threads_and_the_variable_is_gone_again():
    assert _run({}) == (1, "None")
    # the user's own setting wins and stays: two cores, two OpenBLAS threads (main + 1 server)
    assert _run({"OPENBLAS_NUM_THREADS": "2"}) == (2, "2")
