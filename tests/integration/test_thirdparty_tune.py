"""`trainprof tune -- COMMAND` on two public training scripts nobody here wrote (vendored
unmodified under tests/data/thirdparty/: nanoGPT's train.py, PyTorch's word_language_model),
end to end (issue #38): the baseline and its re-run, a knob from outside (nanoGPT: the fused
optimizer, its AdamW built by the script's own configure_optimizers), the program's own
batch-size flag (`--arg-knob`, compared per token), the guard on the losses the scripts
print, tune.json and its patches. Speed is not asserted (a shared 2-core machine); what is
asserted could be false: the trials ran, were measured in the program's own units, and the
guard and knobs say what they did."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from trainprof.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data" / "thirdparty"))
import make_data  # noqa: E402

pytestmark = pytest.mark.slow
FAST = ["--steps", "4", "--warmup", "3", "--verify-trials", "0", "--no-report"]  # no verify pair: the trials are tested here


def _tune(tmp_path: Path, monkeypatch, prep: make_data.Prepared, *opts: str) -> tuple[int, dict]:  # noqa: ANN001
    monkeypatch.chdir(prep.work)  # the scripts read their data relative to where they run
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("TRAINPROF_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "tune"
    rc = main(["tune", *FAST, *opts, "--out", str(out), "--", sys.executable, *prep.argv])
    return rc, json.loads((out / "tune.json").read_text())


def _trial(doc: dict, knob: str) -> dict:
    (t,) = [t for t in doc["trials"] if t["knob"] == knob]
    return t


def test_nanogpt_through_tune(tmp_path, monkeypatch):
    prep = make_data.nanogpt(tmp_path / "work", max_iters=40)
    rc, doc = _tune(tmp_path, monkeypatch, prep, "--knobs", "fused_optimizer", "--arg-knob", "--batch_size=16")
    assert rc == 0
    assert doc["program"]["unit"] == "tokens" and doc["program"]["command"][1:] == prep.argv
    fused, batch = _trial(doc, "fused_optimizer"), _trial(doc, "--batch_size=16")
    assert fused["ok"] and batch["ok"], (fused.get("reason"), batch.get("reason"))
    # the optimizer nanoGPT builds in its own configure_optimizers (for-loop on CPU): the patch points there
    line = next(i for i, x in enumerate((prep.work / "model.py").read_text().splitlines(), 1)
                if "torch.optim.AdamW(" in x)
    assert fused["patch"] == [f"model.py:{line}: AdamW(..., fused=True)"] and fused["same_math"]
    assert fused["accuracy_ok"]  # fused AdamW keeps the maths: the guard passes it
    # the script's own --batch_size: rewritten in its argv, 2x the tokens per step, compared per token
    assert batch["config"]["args"] == {"--batch_size": "16"}
    assert batch["patch"] == ["run with --batch_size 16 (instead of --batch_size 8)"]
    assert batch["tokens_per_s"] > 0 and batch["step_time_s"] > 0


def test_word_language_model_through_tune_with_its_step_marker(tmp_path, monkeypatch):
    prep = make_data.word_language_model(tmp_path / "work")
    rc, doc = _tune(tmp_path, monkeypatch, prep, "--knobs", "none", "--step-marker", "torch.nn.utils:clip_grad_norm_",
                    "--arg-knob", "--lr=20,200")
    assert rc == 0 and doc["program"]["unit"] == "tokens"
    # --lr 200 with manual SGD diverges: the guard refuses it with the reason; 20 is the script's own value
    lr200 = _trial(doc, "--lr=200")
    assert not lr200["accepted"] and lr200["reason"], lr200
    assert "--lr=200" not in " ".join(doc["best"]["knobs"])
