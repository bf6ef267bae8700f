"""run.json's typed blocks keep the wire form the dicts had: the Struct encodes the writer's
dict back key for key, in its order, absent keys absent and nulls null (the contract behind
run.json staying byte-identical), and an old record still decodes."""

import json
from pathlib import Path
from types import SimpleNamespace

import msgspec
import pytest
from msgspec import UNSET

from trainprof.analysis.run.system import summarise_system
from trainprof.errors import InputError
from trainprof.recordtypes.run import load_run
from trainprof.recordtypes.run_parts import Achievable, Distributed, Profile
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


def _same(d: dict, cls: type) -> bool:
    return json.dumps(msgspec.to_builtins(msgspec.convert(d, cls))) == json.dumps(d)


def test_the_achievable_block_in_both_of_its_shapes(tmp_path):
    from trainprof.backends import ceiling

    cache = tmp_path / "ceiling.json"
    ceiling.record("H100", "bf16", 700.0, "2.5", now="2026-11-28T00:00:00+00:00", path=cache)
    fresh = ceiling.lookup("H100", "bf16", "2.5", now="2026-11-29T00:00:00+00:00", path=cache)
    missing = ceiling.lookup("H100", "fp16", "2.5", path=cache)
    assert fresh["tflops"] == 700.0 and missing["tflops"] is None  # the two shapes: measured, and why not
    assert _same(fresh, Achievable) and _same(missing, Achievable)


def test_run_nproc_distributed_block_with_its_ranks_affinity(monkeypatch):
    from trainprof.workload import parallel, trainer

    s = SimpleNamespace(step_time_s=0.2, step_time_median_s=0.19, forward_s=0.05, backward_s=0.1, optimizer_s=0.02,
                        data_s=0.01, tokens_per_s=320.0)
    mon = SimpleNamespace(summary=lambda: s)
    # rank 1 is 50% slower than rank 0: it is the straggler, +20% over the median 0.25 s
    monkeypatch.setattr(parallel, "gather", lambda mine: [mine, {**mine, "rank": 1, "step_time_s": 0.3}])
    d = trainer._job_summary(mon, SimpleNamespace(strategy="ddp", tokens_per_step=64),
                             SimpleNamespace(rank=0, world_size=2, backend="gloo"), binding={"node": 0})
    assert d["straggler_rank"] == 1 and d["straggler_excess_pct"] == pytest.approx(20.0)
    assert set(d["per_rank"][0]) >= {"cpu_affinity", "numa_binding"}
    assert _same(d, Distributed)


def test_an_older_profile_block_decodes_and_re_encodes_as_written():
    # the keys a `profile` record had before window_costs, memory_by_phase and flops_check_step
    # (fea8999, c9dcd12): absent keys stay absent, null ones null
    old = {"rank": 0, "local_rank": 0, "world_size": 1, "local_world_size": 1, "process_group_backend": None,
           "boundary": "optimizer.step() of AdamW", "optimizer_steps": {"AdamW": 12}, "steps_seen": 12,
           "warmup_steps": 2, "flops_step": 1, "measured_steps": [2, 11], "profiled_steps": None,
           "window_complete": True, "root_modules": ["Net"], "dtype_from": None, "error": None, "warnings": [],
           "batch_unit": "samples", "batch_shape": [8, 32], "backward_passes_per_step": 1,
           "micro_batches_per_step": 1, "profiled_step_time_s": [], "profiler_overhead_pct": None}
    p = msgspec.convert(old, Profile)
    assert _same(old, Profile) and p.value("memory_by_phase") is None and p.value("flops_check_step") is None


def test_the_shipped_old_run_json_decodes_and_re_encodes_byte_for_byte():
    # tests/data/reports/cpu_run/run.json: written before system, memory_snapshot, flowchart and layout
    # existed (and with indent 1): every later block absent, none of them null
    path = Path(__file__).parents[2] / "data" / "reports" / "cpu_run" / "run.json"
    rec = load_run(path)
    assert rec.system is UNSET and rec.system_summary is None and rec.batch_unit == "tokens"
    assert rec.to_json() == json.dumps(json.loads(path.read_text()), indent=2) + "\n"


def test_a_batch_unit_outside_its_two_words_is_refused_naming_the_field(tmp_path):
    # every renderer writes "<unit>/s" unescaped, so the record admits only the words a writer uses
    doc = json.loads((Path(__file__).parents[2] / "data" / "reports" / "cpu_run" / "run.json").read_text())
    doc.update(command=["python", "t.py"], status="completed", exit_code=0,
               profile={"batch_unit": "<img src=x onerror=alert(1)>"})
    (tmp_path / "run.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"run.json: .*at `profile.batch_unit`"):
        load_run(tmp_path / "run.json")
