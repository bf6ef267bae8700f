"""`trainprof memory` end to end on the tiny preset (short sequences, a small emulated device).

Every measurement is a real training run in a child process; with a 120 MiB emulated limit
at seq 64 the search ends near micro-batch 12 after ~7 probes of a fraction of a second.
"""

from __future__ import annotations

import json

import pytest

from trainprof.cli import main

pytestmark = pytest.mark.slow  # trains the workload in fresh processes: seconds to minutes each

LIMIT = 120 * 2**20
FAST = ["--preset", "tiny", "--device", "cpu", "--seq-len", "64", "--micro-batch", "4"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("mem") / "m"
    rc = main(["memory", *FAST, "--memory-limit", "120MiB", "--out", str(out)])
    assert rc == 0
    return out, json.loads((out / "memory.json").read_text())


def test_memory_json_fields(study):
    _, r = study
    assert r["schema"] == "trainprof.memory/1"
    p = r["model"]["params"]
    assert p == 3_290_624
    assert (r["params_bytes"], r["grads_bytes"], r["optimizer_bytes"]) == (4 * p, 4 * p, 8 * p)
    assert r["activations_bytes"] > 0 and r["analytic_peak_bytes"] >= r["optimizer_bytes"]
    # CPU: raw RSS includes the interpreter and torch; above-baseline is the comparable number
    assert r["baseline_bytes"] > 100 * 2**20
    assert r["measured_peak_bytes"] == r["baseline_bytes"] + r["measured_above_baseline_bytes"]
    assert 0.8 < r["measured_over_analytic"] < 3
    assert r["device"]["memory_limit_bytes"] == LIMIT and r["device"]["peak_kind"] == "process_hwm"
    assert r["config"]["dtype"] == "fp32" and r["config"]["micro_batch"] == 4


def test_max_micro_batch_is_consistent_with_the_limit(study):
    _, r = study
    s = r["search"]
    best = r["max_micro_batch"]
    assert best == s["max_micro_batch"] and best >= 4 and s["stopped"] == "bracketed"
    by_b = {p["micro_batch"]: p for p in s["probes"]}
    assert by_b[best]["fits"] and by_b[best]["measured_above_baseline_bytes"] <= LIMIT
    miss = by_b[best + 1]  # the search closes the bracket on adjacent micro-batches
    assert not miss["fits"] and miss["status"] == "oom"
    assert all(p["fits"] == (p["micro_batch"] <= best) for p in s["probes"])  # monotone
    assert [p["micro_batch"] for p in s["probes"]][:3] == [1, 2, 4]  # doubling from 1


def test_oom_is_caught_and_the_search_recovers(study):
    _, r = study
    probes = r["search"]["probes"]
    first_oom = next(i for i, p in enumerate(probes) if p["status"] == "oom")
    assert "limit" in probes[first_oom]["reason"]  # the emulated device's OOM
    assert len(probes) > first_oom + 1  # and the search went on after it, in a fresh process
    assert probes[-1]["micro_batch"] == r["max_micro_batch"] + 1 or probes[-1]["fits"]


def test_ladder_measures_each_rung(study):
    _, r = study
    steps = [x["step"] for x in r["ladder"]]
    assert steps[0] == "baseline" and steps[-1] == "CPU offload (optimizer)"
    assert {"gradient accumulation", "selective recompute", "activation checkpointing", "fused AdamW",
            "bf16 autocast", "FSDP (2 ranks)", "Adafactor"} <= set(steps)
    for rung in r["ladder"][:-1]:
        assert rung["status"] == "ok" and rung["measured_above_baseline_bytes"] > 0
        assert rung["planned_peak_bytes"] > 0 and rung["planned_device"] == "cpu"
    # the FSDP rung ran on 2 gloo ranks: its peak is the higher rank's
    fsdp = r["ladder"][steps.index("FSDP (2 ranks)")]
    assert fsdp["ranks"] == 2 and fsdp["config"]["strategy"] == "fsdp"
    assert fsdp["measured_above_baseline_bytes"] == max(fsdp["ranks_above_baseline_bytes"])
    # offload: a reason and a GPU plan, never a CPU number
    off = r["ladder"][-1]
    assert off["status"] == "not run" and off["measured_above_baseline_bytes"] is None
    assert "host is the device" in off["note"] and off["planned_device"] == "cuda" and off["planned_peak_bytes"] > 0
    # the baseline rung is the configuration the top-level numbers describe
    assert r["ladder"][0]["measured_peak_bytes"] == r["measured_peak_bytes"]


def test_terminal_output_and_json_flag(tmp_path, capsys):
    rc = main(["memory", *FAST, "--no-search", "--no-ladder", "--out", str(tmp_path / "j"), "--json"])
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    on_disk = json.loads((tmp_path / "j" / "memory.json").read_text())
    assert printed == on_disk and printed["max_micro_batch"] is None and len(printed["ladder"]) == 1
    rc = main(["memory", *FAST, "--no-search", "--no-ladder", "--out", str(tmp_path / "t")])
    assert rc == 0
    text = capsys.readouterr().out
    assert "peak (analytic)" in text and "Korthikanti" in text and "memory.json" in text


def test_nothing_fits_a_tiny_device(tmp_path):
    out = tmp_path / "n"
    rc = main(["memory", *FAST, "--micro-batch", "1", "--no-ladder", "--memory-limit", "1MiB",
               "--out", str(out), "--json"])
    assert rc == 0
    r = json.loads((out / "memory.json").read_text())
    assert r["max_micro_batch"] == 0 and r["search"]["stopped"] == "nothing fits"
    assert [p["status"] for p in r["search"]["probes"]] == ["oom"]
    assert r["measured_above_baseline_bytes"] > 2**20  # the configuration itself was measured in full


@pytest.mark.parametrize("argv, msg", [
    (["--preset", "gpt9"], "train.preset (--preset) must be one of"),
    (["--memory-limit", "2GX"], "--memory-limit '2GX': expected a size"),
    (["--memory-limit", "0"], "--memory-limit '0': must be at least 1 byte"),
    (["--micro-batch", "0"], "train.micro_batch (--micro-batch)"),
    (["--steps", "0"], "train.steps (--steps) must be an integer from 1 to 2,147,483,647, got 0"),
])
def test_bad_input_is_one_line_exit_2(argv, msg, tmp_path, capsys):
    rc = main(["memory", "--device", "cpu", *argv, "--out", str(tmp_path / "x")])
    assert rc == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_never_overwrites_memory_json(tmp_path, capsys):
    (tmp_path / "memory.json").write_text("{}")
    rc = main(["memory", *FAST, "--no-search", "--no-ladder", "--out", str(tmp_path)])
    assert rc == 2 and "exists and is not empty; pass --force" in capsys.readouterr().err
    rc = main(["memory", *FAST, "--no-search", "--no-ladder", "--out", str(tmp_path), "--force"])
    assert rc == 2 and "'memory.json', which trainprof did not write" in capsys.readouterr().err  # no manifest
    assert (tmp_path / "memory.json").read_text() == "{}"
