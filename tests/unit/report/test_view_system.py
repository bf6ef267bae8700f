"""report/view_system.py: the System section's rows, read back against a planted sampler run."""

from __future__ import annotations

from trainprof.analysis.run.system import summarise_system
from trainprof.recordtypes.base import as_struct
from trainprof.recordtypes.system import System
from trainprof.report.figures import capture, resolve
from trainprof.report.view_system import system_view


def test_rows_name_each_gpu_and_a_missing_cpu_reading_shows_a_dash_without_a_field():
    gpus = [{"index": 3, "util_pct": 80, "power_w": 250.0, "sm_clock_mhz": 1500, "temp_c": 70}]
    # 4 samples, 0.5 s apart: duration 1.5 s; RSS 2 GiB + 1 MiB of workers; no CPU reading
    samples = [{"t_s": 0.5 * t, "rss_bytes": 2 * 2**30, "children_rss_bytes": 2**20, "gpus": gpus} for t in range(4)]
    system = as_struct(summarise_system(samples, interval_s=0.5, window=None, steps=0, tokens=0), System)
    with capture() as shown:
        sv = system_view(system)
    rows = dict(sv.rows)
    assert rows["CPU utilisation (all cores)"] == "— mean, — max"
    assert rows["process RSS, peak"] == "2.00 GiB (+ workers 1.00 MiB)"
    assert rows["GPU 3"] == ("utilisation 80% mean · SM clock 1,500 MHz · memory — · power 250 W mean, "
                             "250 max · 70 °C max")
    assert (sv.n_samples, sv.interval_s, sv.duration) == (4, 0.5, "1.5")
    assert "run.system.summary.gpus[0].power_w_max" in {s.field for s in shown}
    assert not any("cpu_util_pct" in s.field for s in shown)
    record = {"run": {"system": summarise_system(samples, interval_s=0.5, window=None, steps=0, tokens=0)}}
    assert all(resolve(record, s.field) == s.value for s in shown if s.value is not None)  # each field names its figure
    assert system_view(None) is None
