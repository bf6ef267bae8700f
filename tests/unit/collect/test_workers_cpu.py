"""The sampler's per-worker CPU (backends/sensors.HostSensor `workers_cpu_pct`) on planted
children: one that computes (a busy loop, a preprocessing-bound worker) and one that sleeps
(a worker blocked on I/O), then the flowchart's data branch each one gives."""

import subprocess
import sys
import time

from trainprof.analysis.run.system import summarise_system
from trainprof.backends.sensors import HostSensor
from trainprof.diagnose.flowchart import WORKER_CPU_HIGH_PCT, flowchart

from tests.unit.diagnose.run_records import run_record

BUSY = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 5: pass\n"
SLEEP = "import time\ntime.sleep(5)\n"


def _worker_cpu(code: str) -> float:
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        s = HostSensor()
        time.sleep(0.1)
        s.read()  # the child's first reading: its CPU time so far
        time.sleep(0.4)
        return s.read()["workers_cpu_pct"]
    finally:
        child.kill()
        child.wait()


def test_a_computing_worker_reads_high_and_a_sleeping_one_low():
    busy, idle = _worker_cpu(BUSY), _worker_cpu(SLEEP)
    assert busy >= WORKER_CPU_HIGH_PCT > 10 > idle
    branches = []
    for cpu in (busy, idle):
        system = summarise_system([{"t_s": 0.0, "workers_cpu_pct": cpu, "workers": 1},
                                    {"t_s": 0.5, "workers_cpu_pct": cpu, "workers": 1}], interval_s=0.5)
        run = run_record({"data_s": 0.6, "forward_s": 0.2, "backward_s": 0.2}, system=system)
        branches.append(flowchart(None, run)["branch"])
    assert branches == ["data loading: preprocessing-bound", "data loading: I/O-bound"]
