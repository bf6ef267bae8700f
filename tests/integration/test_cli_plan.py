"""`trainprof plan` end to end, in process (pure arithmetic: milliseconds per call)."""

from __future__ import annotations

import json

import pytest

from trainprof.cli import main

GPT3 = ["--layers", "96", "--hidden", "12288", "--heads", "96", "--vocab", "50257", "--seq-len", "2048",
        "--params", "175e9"]


def _json(capsys, argv):
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("layout", [["--dp", "4", "--zero", "2"], [], ["--micro-batch", "1", "--seq-len", "64"],
                                    ["--fsdp", "--dp", "8", "--grad-accum", "4"]])
def test_json_record_is_consistent(capsys, layout):
    r = _json(capsys, ["--preset", "gpt2-124m", "--micro-batch", "8", *layout])
    g = r["per_gpu"]
    assert r["schema"] == "trainprof.plan/1" and r["model"]["params"] == 124_439_808
    # the parts add up to the peak: the ones it is made of, and temporaries ≥ 0 the rest
    assert sum(g[p] for p in g["in_peak"]) == g["peak_bytes"] and g["temporaries_bytes"] >= 0
    assert g["peak_bytes"] == max(g["peak_forward_backward_bytes"], g["peak_optimizer_step_bytes"])
    assert r["fits"] == (g["peak_bytes"] <= r["device"]["capacity_bytes"])
    assert r["max_micro_batch"] >= 1
    rows = r["layouts"]["rows"]
    assert rows and all(row["peak_bytes"] <= r["device"]["capacity_bytes"] for row in rows)


def test_seed_003_gpt3_on_a_v100(capsys):
    r = _json(capsys, [*GPT3, "--dtype", "fp32", "--device", "v100-sxm2", "--no-layouts"])
    st = r["terms"]["states"]
    assert st["weights"] + st["optimizer_states"] == 2_100 * 10**9  # 700 GB + Adam's 1,400 GB
    assert not r["fits"] and r["max_micro_batch"] == 0
    r = _json(capsys, [*GPT3, "--dtype", "fp16", "--device", "v100-sxm2", "--no-layouts", "--tokens", "300e9",
                       "--mfu", "0.224"])
    assert 300 < r["time"]["gpu_years"] < 400  # Lambda's 355 GPU-years (seed 003), same order


def test_config_json_and_mfu_from_a_run(tmp_path, capsys):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
                               "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
                               "vocab_size": 32000, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
                               "tie_word_embeddings": False}))
    r = _json(capsys, ["--config", str(cfg), "--fsdp", "--dp", "8", "--activation-checkpointing", "full",
                       "--tokens", "2e12", "--mfu-from", "tests/data/reports/cpu_run", "--no-layouts"])
    assert r["model"]["params"] == 6_738_415_616 and r["model"]["gated"]
    assert r["time"]["mfu"] == pytest.approx(0.026214090597732578) and "cpu_run" in r["time"]["mfu_source"]


def test_out_writes_plan_json_and_tables_print(tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["plan", "--preset", "tiny", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "largest micro-batch that fits" in text and "Layouts of 1 GPUs" in text
    assert json.loads((out / "plan.json").read_text())["schema"] == "trainprof.plan/1"
    assert main(["plan", "--preset", "tiny", "--out", str(out)]) == 2  # not over an existing one without --force


@pytest.mark.parametrize("argv,words", [
    (["--layers", "2"], "name the model"),
    (["--preset", "tiny", "--tp", "3"], "must divide"),
    (["--preset", "tiny", "--device", "h1000"], "no such row"),
    (["--preset", "tiny", "--tokens", "1e9"], "needs an MFU"),
    (["--preset", "tiny", "--offload", "optimizer"], "ZeRO"),
    (["--preset", "tiny", "--params", "lots"], "expected a count"),
    (["--preset", "tiny", "--mfu", "1.5"], "mfu"),
    (["--preset", "tiny", "--seq-len", "4096"], "position table"),
    (["--config", "/nonexistent/config.json"], "config.json"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys):
    assert main(["plan", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
