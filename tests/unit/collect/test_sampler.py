"""The system sampler: scripted sensors and clock (exact numbers), RAPL on a fake powercap
tree, and the real host sensor on this machine."""

import time

import pytest

from trainprof.analysis.run.system import summarise_system
from trainprof.backends.cpu import CpuBackend
from trainprof.backends.sensors import HostSensor, RaplSensor
from trainprof.collect.sampler import SystemSampler
from trainprof.collect.monitor import Monitor


class Clock:
    def __init__(self, times):
        self.times = iter(times)

    def __call__(self):
        return next(self.times)


class Scripted:
    """A sensor whose readings are a function of the sampler's clock reading."""

    def __init__(self, name, fn, reason=None):
        self.name, self.fn, self.reason = name, fn, reason
        self.t = 0.0

    def read(self):
        return self.fn(self)


def test_samples_are_relative_to_the_first_and_merge_sensors():
    clock = Clock([10.0, 10.5, 11.0])
    host = Scripted("host", lambda s: {"cpu_util_pct": 50.0, "rss_bytes": 100})
    gpu = Scripted("nvml", lambda s: {"gpus": [{"index": 0, "power_w": 200.0}]})
    off = Scripted("rapl", None, reason="no RAPL here")
    s = SystemSampler([host, gpu, off], interval_s=1.0, clock=clock)
    for _ in range(3):
        s.sample_now()
    assert [r["t_s"] for r in s.samples] == [0.0, 0.5, 1.0]
    assert s.samples[1] == {"t_s": 0.5, "cpu_util_pct": 50.0, "rss_bytes": 100,
                            "gpus": [{"index": 0, "power_w": 200.0}]}
    assert s.unavailable == {"rapl": "no RAPL here"}


def test_a_failing_sensor_is_dropped_and_named():
    calls = []

    def flaky(_s):
        calls.append(1)
        raise OSError("device went away")

    s = SystemSampler([Scripted("nvml", flaky), Scripted("host", lambda _: {"rss_bytes": 1})],
                      interval_s=1.0, clock=Clock([0.0, 1.0, 2.0]))
    for _ in range(3):
        s.sample_now()
    assert len(calls) == 1 and s.errors == {"nvml": "OSError: device went away"}
    assert [r["rss_bytes"] for r in s.samples] == [1, 1, 1]


def test_interval_must_be_positive():
    with pytest.raises(ValueError, match="interval_s"):
        SystemSampler([], interval_s=0)


def test_monitor_energy_over_the_measured_steps_by_hand():
    # Sampler clock: start sample 0; steps (start, end) = (1,2) warm-up, (2,4), (4,6); stop sample 7.
    # 100 W on the GPU, CPU counter 50 J/s. Measured window [2, 6] → 400 J GPU, 200 J CPU.
    clock = Clock([0.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 7.0])
    now = {"t": 0.0}

    def gpu(_s):
        return {"gpus": [{"index": 0, "power_w": 100.0, "energy_j": 1000.0 + 100.0 * now["t"]}]}

    def rapl(_s):
        return {"cpu_energy_j": 50.0 * now["t"]}

    sampler = SystemSampler([Scripted("nvml", gpu), Scripted("rapl", rapl)], interval_s=3600, clock=clock)
    mon = Monitor(CpuBackend(), tokens_per_step=1000, flops_per_step=1e9, warmup_steps=1, sampler=sampler)
    for _ in range(3):
        with mon.step():
            pass
    now["t"] = 7.0  # the stop sample reads the counters at t = 7
    system = mon.system(tokens_scale=2)
    e = system.summary.energy
    assert [r["t_s"] for r in system.samples] == [0.0, 7.0]
    assert e.window_s == 4.0 and e.steps == 2 and e.tokens == 2 * 1000 * 2
    assert e.gpu_j == pytest.approx(400.0) and e.gpu_counter_j == pytest.approx(400.0)
    assert e.gpu_j_per_step == pytest.approx(200.0) and e.gpu_j_per_token == pytest.approx(0.1)
    assert e.cpu_j == pytest.approx(200.0) and e.cpu_j_per_token == pytest.approx(0.05)
    assert system.summary.gpus[0].power_w_mean == 100.0


def test_summary_of_host_counters_and_gpus():
    samples = [
        {"t_s": 0.0, "cpu_util_pct": 0.0, "rss_bytes": 10, "disk_read_bytes": 1000, "net_tx_bytes": 5,
         "gpus": [{"index": 0, "util_pct": 90, "power_w": 300.0, "temp_c": 60, "mem_used_bytes": 7}]},
        {"t_s": 1.0, "cpu_util_pct": 40.0, "rss_bytes": 30, "disk_read_bytes": 1500, "net_tx_bytes": 5,
         "gpus": [{"index": 0, "util_pct": 100, "power_w": 500.0, "temp_c": 70, "mem_used_bytes": 9}]},
        {"t_s": 2.0, "cpu_util_pct": 60.0, "rss_bytes": 20, "disk_read_bytes": 1700, "net_tx_bytes": 9,
         "gpus": [{"index": 0, "util_pct": 80, "power_w": 300.0, "temp_c": 65, "mem_used_bytes": 8}]},
    ]
    s = summarise_system(samples, interval_s=1.0, steps=4, tokens=400)["summary"]
    assert s["cpu_util_pct"] == {"mean": 50.0, "max": 60.0}  # the priming reading is left out
    assert s["rss_bytes_max"] == 30 and s["disk_read_bytes"] == 700 and s["net_tx_bytes"] == 4
    g = s["gpus"][0]
    assert g["util_pct_mean"] == 90 and g["temp_c_max"] == 70 and g["mem_used_bytes_max"] == 9
    assert s["energy"]["gpu_j"] == pytest.approx(800.0)  # (300+500)/2 + (500+300)/2
    assert s["energy"]["gpu_j_per_token"] == pytest.approx(2.0)
    assert "cpu_unavailable" in s["energy"]


def test_a_compiled_run_is_summarised_over_its_measured_steps_and_counted_by_the_board():
    """Planted from the H200 run of 2026-11-28: 24 s of compilation at 5% utilisation and ~75 W,
    then a 0.7 s measured window at ~95% and 700 W, sampled every 0.5 s. The GPU's means describe
    the window (the readings at 25.0 and 25.5 s cover it: NVML's readings look back one period),
    not the run; energy is the board counter's (700 W × 0.7 s = 490 J), the power integral beside it,
    with a note that the window spans fewer than 4 intervals."""
    samples = []
    for i in range(52):  # t = 0, 0.5, ..., 25.5
        t = 0.5 * i
        busy = 24.5 < t <= 25.5
        p = 700.0 if busy else 75.0
        samples.append({"t_s": t, "gpus": [{"index": 0, "util_pct": 95 if busy else 5, "power_w": p,
                                             "sm_clock_mhz": 1980, "energy_j": 0.0}]})
    for r in samples:  # the counter: 75 W before 24.5 s, 700 W from then on (joules since the start)
        t = r["t_s"]
        r["gpus"][0]["energy_j"] = 75.0 * min(t, 24.5) + 700.0 * max(0.0, t - 24.5)
    window = (24.55, 25.25)
    s = summarise_system(samples, interval_s=0.5, window=window, steps=20, tokens=327_680)["summary"]
    g = s["gpus"][0]
    assert g["scope"] == "measured steps" and g["util_pct_mean"] == 95 and g["power_w_mean"] == 700.0
    en = s["energy"]
    assert en["gpu_source"] == "NVML board energy counter"
    assert en["gpu_j"] == pytest.approx(700.0 * 0.7) == en["gpu_counter_j"]
    assert en["gpu_power_integral_j"] < en["gpu_j"]  # the straight lines from 75 W to 700 W undercount
    assert "fewer than 4 sampling intervals" in en["gpu_note"]
    # no reading covers a window before the first sample after it: the whole run, said so
    early = summarise_system(samples[:1] + samples[-1:], interval_s=0.5, window=(1.0, 1.2))["summary"]
    assert early["gpus"][0]["scope"] == "whole run"


def _powercap(tmp_path, uj, rng=2_000_000):
    d = tmp_path / "sys/class/powercap/intel-rapl:0"
    d.mkdir(parents=True, exist_ok=True)
    (d / "name").write_text("package-0\n")
    (d / "max_energy_range_uj").write_text(f"{rng}\n")
    (d / "energy_uj").write_text(f"{uj}\n")
    sub = tmp_path / "sys/class/powercap/intel-rapl:0:0"  # a sub-domain (core): part of the package
    sub.mkdir(exist_ok=True)
    (sub / "name").write_text("core\n")
    return d


def test_rapl_reads_joules_and_unwraps_the_counter(tmp_path):
    d = _powercap(tmp_path, 1_000_000)
    r = RaplSensor(root=tmp_path)
    assert r.reason is None and r.read() == {"cpu_energy_j": 1.0}
    (d / "energy_uj").write_text("500000\n")  # wrapped past 2 J
    assert r.read() == {"cpu_energy_j": 2.5}


def test_rapl_absent_or_root_only_is_a_reason(tmp_path):
    assert "absent" in RaplSensor(root=tmp_path).reason
    d = _powercap(tmp_path, 1)
    (d / "energy_uj").chmod(0)
    r = RaplSensor(root=tmp_path)
    import os
    if os.geteuid() == 0:  # root reads anything: the permission case cannot be shown
        assert r.reason is None
    else:
        assert "root only" in r.reason


def test_real_host_sampler_on_this_machine():
    import torch

    a = torch.randn(256, 256)
    with SystemSampler([HostSensor()], interval_s=0.05) as s:
        end = time.perf_counter() + 0.4
        while time.perf_counter() < end:
            a @ a
    assert len(s.samples) >= 4
    assert all(r["rss_bytes"] > 10 * 2**20 for r in s.samples)
    utils = [r["cpu_util_pct"] for r in s.samples[1:] if r["cpu_util_pct"] is not None]
    assert utils and all(0.0 <= u <= 100.0 for u in utils) and max(utils) > 0
    assert [r["t_s"] for r in s.samples] == sorted(r["t_s"] for r in s.samples)
