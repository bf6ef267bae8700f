"""run.json's typed blocks keep the wire form the dicts had: the Struct encodes the writer's
dict back key for key, in its order, absent keys absent and nulls null (the contract behind
run.json staying byte-identical), and an old record still decodes."""

import json

import msgspec
import pytest

from trainprof.analysis.run.system import summarise_system
from trainprof.recordtypes.system import System

GPU = {"index": 0, "util_pct": 90, "mem_util_pct": 40, "sm_clock_mhz": 1980, "power_w": 300.0,
       "mem_used_bytes": 7, "temp_c": 60, "energy_j": 1000.0}


def _samples(gpu: bool, rapl: bool, workers: bool) -> list[dict]:
    out = []
    for t in range(6):
        s = {"t_s": float(t), "cpu_util_pct": 10.0 * t, "others_cpu_pct": 5.0, "steal_pct": 0.0, "load_avg_1m": 1.5,
             "rss_bytes": 10 + t, "children_rss_bytes": 3, "disk_read_bytes": 100 * t, "disk_write_bytes": 7 * t,
             "net_rx_bytes": 2 * t, "net_tx_bytes": 5}
        if gpu:
            s["gpus"] = [{**GPU, "energy_j": 1000.0 + 250.0 * t}]
        if rapl:
            s["cpu_energy_j"] = 50.0 * t
        if workers:
            s.update(workers_cpu_pct=80.0, workers=2)
        out.append(s)
    return out


@pytest.mark.parametrize("gpu,rapl,workers,window,steps", [
    (True, True, True, (1.0, 4.0), 3),  # every key: counter and integral, RAPL, workers
    (True, False, False, (1.0, 1.5), 0),  # a short window (gpu_note), no steps: per-step energy null
    (False, False, False, None, 2),  # a CPU run without a window: window null, both parts unavailable
])
def test_the_struct_encodes_the_summarisers_dict_key_for_key(gpu, rapl, workers, window, steps):
    d = summarise_system(_samples(gpu, rapl, workers), interval_s=1.0, window=window, steps=steps,
                         tokens=100 * steps, unavailable={"rapl": "no RAPL"}, errors={"nvml": "stopped"})
    typed = msgspec.convert(d, System)
    # json.dumps keeps key order: the text equal means the same keys, in the same order, with the same values
    assert json.dumps(msgspec.to_builtins(typed)) == json.dumps(d)


def test_a_record_older_than_the_window_field_re_encodes_without_it():
    d = summarise_system(_samples(False, False, False), interval_s=1.0, steps=2, tokens=200)
    del d["summary"]["energy"]["window"]  # absent before fcd7578 (the schema stayed run/1)
    assert "window" not in msgspec.to_builtins(msgspec.convert(d, System))["summary"]["energy"]
