"""machine_state on scripted NVML values and a planted cpufreq tree (backends/machine_state.py,
diagnose/machine_rules.py): a throttled GPU, locked clocks and a powersave governor are named
with their fix; a machine at full clocks is not."""

from types import SimpleNamespace

from trainprof.backends import machine_state as ms
from trainprof.diagnose.engine import diagnose_rank

from tests.unit.diagnose.run_records import run_record


class _Err(Exception):
    pass


def _nvml(throttle: int, app: int, persistence: int):
    return SimpleNamespace(
        NVMLError=_Err, NVML_FEATURE_ENABLED=1, NVML_CLOCK_SM=1,
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetPersistenceMode=lambda h: persistence,
        nvmlDeviceGetApplicationsClock=lambda h, c: app, nvmlDeviceGetMaxClockInfo=lambda h, c: 1980,
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: throttle)


def _run(state, sm_clock=None):
    system = {"summary": {"gpus": [{"index": 0, "sm_clock_mhz_mean": sm_clock}]}} if sm_clock else None
    # step 1.0 s: 0.8 s forward + backward, 0.2 s optimizer
    return run_record({"forward_s": 0.3, "backward_s": 0.5, "optimizer_s": 0.2},
                      environment={"machine_state": state}, system=system)


def test_scripted_power_cap_throttle_is_a_finding_with_its_cost_and_fix():
    # 0x4 software power cap + 0x1 idle (not a cost); SM clock 990 of 1980 MHz over the steps
    gpus = ms.read_gpus(_nvml(0x4 | 0x1, 1980, 1))
    assert gpus == [{"index": 0, "persistence": True, "app_sm_mhz": 1980, "max_sm_mhz": 1980,
                     "throttle": ["software power cap"]}]
    f = next(x for x in diagnose_rank(None, _run({"gpus": gpus}, sm_clock=990)) if x.id == "machine_state")
    assert f.estimated_gain_pct == 40.0  # (1 − 990/1980) × 80% compute share
    assert "software power cap" in f.evidence and "nvidia-smi" in f.fix


def test_locked_application_clocks_and_persistence_off():
    gpus = ms.read_gpus(_nvml(0, 990, 0))
    f = next(x for x in diagnose_rank(None, _run({"gpus": gpus})) if x.id == "machine_state")
    assert "990 of 1980" in f.evidence and "nvidia-smi -rac" in f.fix and "nvidia-smi -pm 1" in f.fix


def test_full_clocks_give_no_finding():
    gpus = ms.read_gpus(_nvml(0x1, 1980, 1))  # idle only: not a cost
    assert not any(x.id == "machine_state" for x in diagnose_rank(None, _run({"gpus": gpus}, sm_clock=1900)))


def test_planted_powersave_governor(tmp_path):
    for i in range(2):
        d = tmp_path / f"sys/devices/system/cpu/cpu{i}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("powersave\n")
        (d / "scaling_cur_freq").write_text("1200000\n")
        (d / "cpuinfo_max_freq").write_text("3000000\n")
    cpu = ms.read_cpu(tmp_path)
    assert cpu == {"governors": {"powersave": 2}, "cur_mhz_mean": 1200.0, "max_mhz": 3000.0}
    f = next(x for x in diagnose_rank(None, _run({"cpu": cpu, "gpus": []})) if x.id == "machine_state")
    assert f.estimated_gain_pct == 12.0  # (1 − 1200/3000) × 20% host share
    assert "cpupower frequency-set -g performance" in f.fix and f.bottleneck == "host overhead"
    assert ms.read_cpu(tmp_path / "none") == {}  # no cpufreq: nothing claimed
