"""`trainprof run` end to end on the tiny preset (small batches so the suite stays fast)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainprof.cli import main

pytestmark = pytest.mark.slow  # trains the workload in fresh processes: seconds to minutes each

FAST = ["--micro-batch", "4", "--seq-len", "64", "--eval-batches", "1", "--device", "cpu"]


def test_run_writes_a_complete_run_json(tmp_path, capsys):
    out = tmp_path / "run1"
    rc = main(["run", "--steps", "4", *FAST, "--out", str(out)])
    assert rc == 0
    d = json.loads((out / "run.json").read_text())
    assert d["schema"] == "trainprof.run/1" and d["world_size"] == 1
    assert d["device"]["kind"] == "cpu" and d["device"]["peak_source"] == "measured"
    assert d["device"]["peak_tflops"] > 0
    pm = d["device"]["peak_measurement"]  # the peak's provenance (backends/cpu_peak.py)
    assert pm["source"] in ("measured", "cached, checked") and pm["value"] == d["device"]["peak_tflops"]
    assert pm["measured_at"] and "others_cpu_share" in pm and "load_avg_1m_per_core" in pm
    assert d["model"]["params"] > 1_000_000
    assert d["config"]["micro_batch"] == 4 and d["config"]["dtype"] == "fp32"
    assert len(d["steps"]) == 4
    for s in d["steps"]:
        phases = s["data_s"] + s["h2d_s"] + s["forward_s"] + s["backward_s"] + s["optimizer_s"] + s["other_s"]
        assert phases == pytest.approx(s["step_time_s"], rel=1e-6)
        assert s["tokens"] == 4 * 64
    sm = d["summary"]
    assert sm["tokens_per_step"] == 256 and sm["measured_steps"] == 2
    assert sm["flops_per_step"] == d["flops"]["analytic_flops_per_step"]
    assert 0 < sm["mfu"] < 1.5 and sm["mfu"] == pytest.approx(sm["hfu"])
    assert sm["tflops"] == pytest.approx(sm["mfu"] * d["device"]["peak_tflops"], rel=1e-9)
    assert sm["peak_memory_bytes"] > 50 * 2**20 and sm["val_loss"] is not None
    sysm = d["system"]  # sampled by default every 0.5 s, with a sample at start and at stop
    assert sysm["interval_s"] == 0.5 and len(sysm["samples"]) >= 2
    assert sysm["summary"]["rss_bytes_max"] > 50 * 2**20
    assert sysm["summary"]["energy"]["steps"] == 2 and sysm["summary"]["energy"]["tokens"] == 2 * 256
    assert "gpu_unavailable" in sysm["summary"]["energy"]  # a CPU run has no GPU power
    text = capsys.readouterr().out
    assert "MFU / HFU" in text and "run.json" in text and "System (" in text
    assert [p.name for p in tmp_path.iterdir()] == ["run1"]  # no stray temp folders


def test_default_run_really_learns(tmp_path):
    out = tmp_path / "learn"
    rc = main(["run", "--steps", "30", "--micro-batch", "8", "--seq-len", "128", "--eval-batches", "2",
               "--device", "cpu", "--out", str(out), "--json"])
    assert rc == 0
    s = json.loads((out / "run.json").read_text())["summary"]
    # ln(256) = 5.55 at init; byte-level Python source drops well below 3.5 within 30 steps.
    assert s["loss_first"] > 5.0
    assert s["loss_last"] < s["loss_first"] - 1.5
    assert s["val_loss"] < 3.6


def test_knobs_reach_the_run(tmp_path):
    out = tmp_path / "knobs"
    rc = main(["run", "--steps", "3", *FAST, "--grad-accum", "2", "--activation-checkpointing",
               "--optimizer", "forloop", "--attention", "manual", "--dtype", "bf16",
               "--num-workers", "1", "--out", str(out)])
    assert rc == 0
    d = json.loads((out / "run.json").read_text())
    assert d["config"]["grad_accum"] == 2 and d["device"]["peak_dtype"] == "bf16"
    assert d["steps"][0]["tokens"] == 2 * 4 * 64
    assert d["summary"]["hardware_flops_per_step"] > d["summary"]["flops_per_step"]
    assert d["summary"]["hfu"] > d["summary"]["mfu"]


@pytest.mark.parametrize("argv,needle", [
    (["run", "--preset", "gpt9"], "--preset"),
    (["run", "--device", "cuda:0"] if not __import__("torch").cuda.is_available() else ["run", "--device", "tpu"], "--device"),
    (["run", "--data", "/no/such/corpus"], "--data /no/such/corpus"),
    (["run", "--system-interval", "-1"], "--system-interval"),
    (["run", "--device", "cpu", "--memory-snapshot"], "--memory-snapshot needs CUDA"),
    (["run", "--memory-snapshot", "-1"], "run.memory_snapshot (--memory-snapshot) must be ≥ 1"),
    (["run", "--nsys-capture", "--profile"], "run.nsys_capture (--nsys-capture) replaces --profile"),
    (["run", "--micro-batch", "100000000"], "--micro-batch"),
    (["run", "--steps", "zero"], "--steps"),
    (["run", "--peak-tflops", "-3"], "--peak-tflops"),
    (["run", "--gpu-spec", "nope", "--steps", "1", "--warmup-steps", "0", *FAST], "--gpu-spec"),
    # the summary needs a measured step: --steps 2 used to drop a warm-up step without a word
    (["run", "--steps", "2"], "train.steps (--steps) must be ≥ 3: --warmup-steps is 2"),
    (["nosuchcommand"], "nosuchcommand"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, argv, needle):
    out = tmp_path / "never"
    rc = main([*argv, "--out", str(out)] if argv[0] == "run" else argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("trainprof: error:") and needle in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_existing_output_folder_is_never_overwritten(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["run", "--out", str(tmp_path)]) == 2
    assert "--out" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_console_entry_points_work_as_processes(tmp_path):
    r = subprocess.run([sys.executable, "-m", "trainprof", "run", "--data", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "trainprof", "specs", "--json"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0
    keys = {d["key"] for d in json.loads(r.stdout)["devices"]}
    assert {"h100-sxm", "a100-sxm4-80gb", "l40s", "mi300x"} <= keys


def test_specs_match(capsys):
    assert main(["specs", "--match", "NVIDIA L40S", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["devices"][0]["key"] == "l40s"
    assert main(["specs", "--match", "NVIDIA RTX A6000"]) == 1
    assert "is not in the spec table" in capsys.readouterr().out


def test_profile_records_a_trace_of_extra_steps(tmp_path):
    import gzip

    out = tmp_path / "prof"
    assert main(["run", "--steps", "2", "--warmup-steps", "1", *FAST, "--profile", "--profile-steps", "2",
                 "--out", str(out)]) == 0
    d = json.loads((out / "run.json").read_text())
    assert len(d["steps"]) == 2  # profiled steps are not in the measured record
    trace = json.load(gzip.open(out / "trace.json.gz"))
    names = [e.get("name", "") for e in trace["traceEvents"]]
    assert sum(n.startswith("ProfilerStep#") for n in names) == 2
    for phase in ("data", "h2d", "forward", "backward", "optimizer"):
        assert names.count(f"trainprof.{phase}") == 2
    assert any(e.get("cat") == "cpu_op" and "Input Dims" in e.get("args", {}) for e in trace["traceEvents"])
    a = json.loads((out / "analysis.json").read_text())
    assert a["schema"] == "trainprof.analysis/1" and a["ranks"][0]["file"] == "trace.json.gz"
    assert a["ranks"][0]["steps"] == 2 and a["ranks"][0]["top_ops"][0]["metric"] == "self_cpu"


def test_profiled_per_op_flops_add_up_to_the_flop_counter(tmp_path):
    """Shape-derived FLOPs of every priced op in the profiled steps ≈ FlopCounterMode's total."""
    from trainprof.analysis.timeline.context import Context
    from trainprof.analysis.cost.roofline import priced_flops
    from trainprof.trace import read_trace

    out = tmp_path / "flops"
    assert main(["run", "--steps", "1", "--warmup-steps", "0", *FAST, "--profile", "--profile-steps", "2",
                 "--out", str(out)]) == 0
    ctx = Context.build(read_trace(out / "trace.json.gz"))
    total, priced, missing = priced_flops(ctx)
    counted = json.loads((out / "run.json").read_text())["flops"]["model_flops_per_step"]
    assert missing == 0 and priced > 100
    assert total / len(ctx.steps) == pytest.approx(counted, rel=0.05)
    a = json.loads((out / "analysis.json").read_text())["ranks"][0]
    assert a["roofline"]["source"] == "measured on this machine" and a["roofline"]["peak_bandwidth_gbs"] > 0
    assert a["roofline_points"][0]["bound"] in ("compute", "memory", "latency")
    assert (out / "roofline.png").stat().st_size > 10_000 and (out / "roofline.svg").exists()
