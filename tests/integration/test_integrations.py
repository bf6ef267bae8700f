"""The optional integrations with the real libraries, on CPU, tiny models built from configs.

Each library is optional (`pip install -e ".[integrations]"`, which .ci/run does); a test
whose library is missing is skipped with the install line as the reason.
"""

from __future__ import annotations

import json

import logging
from pathlib import Path

import pytest
import torch

from trainprof import Monitor
from trainprof.workload.config import ModelConfig
from trainprof.workload.model import GPT

EXTRA = "pip install -e '.[integrations]'"
TINY = ModelConfig(n_layer=1, n_head=2, d_model=32, vocab_size=128, context_len=64)
B, T = 4, 32


def _event_tags(log_dir: Path) -> dict[str, list[float]]:
    ea_mod = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                                 reason=f"tensorboard not installed ({EXTRA})")
    files = list(log_dir.rglob("events.out.tfevents.*"))
    assert files, f"no event file under {log_dir}"
    out: dict[str, list[float]] = {}
    for f in files:
        ea = ea_mod.EventAccumulator(str(f.parent))
        ea.Reload()
        for tag in ea.Tags()["scalars"]:
            out[tag] = [e.value for e in ea.Scalars(tag)]
        for tag in ea.Tags()["tensors"]:
            out.setdefault(tag, [])
    return out


def _batches(n: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(0, TINY.vocab_size, (n, B, T + 1), generator=g)
    return [(d[:, :-1].contiguous(), d[:, 1:].contiguous()) for d in data]


def _assert_real(tokens_per_sec: float, tflops: float, mfu: float) -> None:
    assert tokens_per_sec > 0 and tflops > 0
    assert 0 < mfu < 1.5  # against the measured CPU matmul peak


# ---- TensorBoard ------------------------------------------------------------------------
def test_tensorboard_writer_logs_monitor_steps_and_summary(tmp_path):
    pytest.importorskip("tensorboard", reason=f"tensorboard not installed ({EXTRA})")
    from trainprof.integrations.tensorboard import TensorBoardWriter

    torch.manual_seed(0)
    model = GPT(TINY)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batches = _batches(4)
    mon = Monitor("cpu", tokens_per_step=B * T)
    mon.count_flops(model, batches[0])
    seen = []
    mon.on_step = seen.append  # an existing hook keeps working after watch()
    tb = TensorBoardWriter(str(tmp_path / "tb")).watch(mon)
    for x, y in batches:
        with mon.step() as s:
            with s.phase("forward"):
                loss = model(x, y)
            with s.phase("backward"):
                loss.backward()
            with s.phase("optimizer"):
                opt.step()
                opt.zero_grad()
            s.loss = loss
    tb.close()
    assert len(seen) == 4
    tags = _event_tags(tmp_path / "tb")
    for tag in ("throughput/tokens_per_sec", "throughput/tflops", "throughput/mfu", "time/step_s",
                "time/data_s", "time/forward_s", "time/backward_s", "time/optimizer_s", "loss",
                "summary/throughput/mfu", "summary/throughput/tokens_per_sec"):
        assert tag in tags, f"{tag} missing from {sorted(tags)}"
    assert len(tags["throughput/mfu"]) == 4 and len(tags["summary/throughput/mfu"]) == 1
    assert "trainprof/summary/text_summary" in tags
    for i in range(4):
        _assert_real(tags["throughput/tokens_per_sec"][i], tags["throughput/tflops"][i],
                     tags["throughput/mfu"][i])
    summ = mon.summary()
    assert tags["summary/throughput/mfu"][0] == pytest.approx(summ.mfu, rel=1e-6)
    # per-step values are the same pure functions over one step
    rec = mon.steps[2]
    assert tags["throughput/tokens_per_sec"][2] == pytest.approx(B * T / rec.step_time_s, rel=1e-5)


def test_tensorboard_writer_names_conventions(tmp_path):
    pytest.importorskip("tensorboard", reason=f"tensorboard not installed ({EXTRA})")
    from trainprof.integrations.tensorboard import TensorBoardWriter
    from trainprof.recordtypes.run import StepRecord

    rec = StepRecord(step=0, step_time_s=2.0, data_s=0.5, h2d_s=0.0, forward_s=0.5, backward_s=1.0,
                     optimizer_s=0.0, other_s=0.0, tokens=1000, loss=3.0)
    # 10 TFLOP in 2 s on a 10 TFLOP/s peak: 5 TFLOPS, MFU 0.5; plain on_step use, no Monitor
    with TensorBoardWriter(str(tmp_path / "tt"), names="torchtitan", flops_per_step=10e12,
                           peak_tflops=10.0) as tt:
        got = tt.log_step(rec)
    assert got["throughput(tps)"] == 500.0 and got["tflops"] == 5.0 and got["mfu(%)"] == 50.0
    assert got["time_metrics/end_to_end(s)"] == 2.0 and got["time_metrics/data_loading(s)"] == 0.5
    assert got["loss_metrics/global_avg_loss"] == 3.0
    with TensorBoardWriter(str(tmp_path / "pl"), names="lightning", flops_per_step=10e12) as lw:
        got = lw.log_step(rec)  # no peak: no MFU, never a guess
    assert got["train/device/items_per_sec"] == 500.0 and got["train/device/flops_per_sec"] == 5e12
    assert "train/device/mfu" not in got
    tags = _event_tags(tmp_path / "tt")
    assert tags["mfu(%)"] == [50.0]
    with pytest.raises(ValueError, match="names"):
        TensorBoardWriter(str(tmp_path / "x"), names="wandb")


# ---- Hugging Face Trainer -----------------------------------------------------------------
@pytest.mark.slow  # trains a Hugging Face model
def test_hf_trainer_callback_logs_real_metrics(tmp_path, caplog):
    transformers = pytest.importorskip("transformers", reason=f"transformers not installed ({EXTRA})")
    pytest.importorskip("accelerate", reason=f"accelerate (needed by Trainer) not installed ({EXTRA})")
    pytest.importorskip("tensorboard", reason=f"tensorboard not installed ({EXTRA})")
    from trainprof.integrations.hf import attach

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=128, n_positions=64,
                                  bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 128, (32, T), generator=g)
    data = [{"input_ids": r, "labels": r.clone()} for r in ids]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=5, per_device_train_batch_size=B,
        gradient_accumulation_steps=2, logging_steps=1, save_strategy="no", use_cpu=True,
        disable_tqdm=True, report_to=["tensorboard"],
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
    cb = attach(trainer, tensorboard_dir=str(tmp_path / "tb"), run_json=str(tmp_path / "run.json"))
    with caplog.at_level(logging.INFO, logger="trainprof.integrations"):
        trainer.train()

    assert cb.flops_method == "FlopCounterMode"
    assert "FlopCounterMode" in caplog.text
    train_logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(train_logs) == 5
    for h in train_logs:
        assert h["throughput/tokens_per_sec"] > 0 and h["time/step_s"] > 0
        assert h["time/forward_s"] > 0 and h["time/backward_s"] > 0 and h["time/optimizer_s"] > 0
        _assert_real(h["throughput/tokens_per_sec"], h["throughput/tflops"], h["throughput/mfu"])
    # tokens: 2 micro-batches of B×T per step
    step = cb.monitor.steps[-1]
    assert step.tokens == 2 * B * T
    assert train_logs[-1]["throughput/tokens_per_sec"] == pytest.approx(2 * B * T / step.step_time_s)
    # FLOPs: the exact count for 2 micro-batches, not the 6N estimate
    n = sum(p.numel() for p in model.parameters())
    assert cb.monitor.flops_per_step > 6 * 0.5 * n * 2 * B * T
    s = cb.summary
    assert s is not None and s.measured_steps == 4
    _assert_real(s.tokens_per_s, s.tflops, s.mfu)
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["config"]["integration"] == "transformers.Trainer" and run["flops"]["method"] == "FlopCounterMode"
    assert (tmp_path / "run.json").exists()
    ours = _event_tags(tmp_path / "tb")
    for tag in ("throughput/tokens_per_sec", "throughput/tflops", "throughput/mfu", "time/step_s",
                "summary/throughput/mfu"):
        assert tag in ours, f"{tag} missing from {sorted(ours)}"
    # attach() runs ahead of report_to's TensorBoardCallback, so it reports our keys too
    theirs = _event_tags(tmp_path / "out")  # HF's default: output_dir/runs/<date>
    assert "train/throughput/mfu" in theirs and "train/loss" in theirs


@pytest.mark.slow  # trains a Hugging Face model
def test_hf_callback_falls_back_to_6n_and_says_so(tmp_path, caplog):
    transformers = pytest.importorskip("transformers", reason=f"transformers not installed ({EXTRA})")
    pytest.importorskip("accelerate", reason=f"accelerate (needed by Trainer) not installed ({EXTRA})")
    from trainprof.integrations._common import matmul_params
    from trainprof.integrations.hf import TrainprofCallback

    transformers.logging.set_verbosity_error()
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=128, n_positions=64,
                                  bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg)
    data = [{"input_ids": r, "labels": r.clone()} for r in torch.randint(0, 128, (8, T))]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=B, logging_steps=1,
        save_strategy="no", use_cpu=True, disable_tqdm=True, report_to=[],
    )

    def no_loss(model, inputs):
        raise RuntimeError("this loss cannot be replayed")

    cb = TrainprofCallback(loss_fn=no_loss)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[cb])
    with caplog.at_level(logging.INFO, logger="trainprof.integrations"):
        trainer.train()
    assert cb.flops_method == "6N estimate"
    assert "6N estimate" in caplog.text and "this loss cannot be replayed" in caplog.text
    # tied LM head counts, position table does not
    n = matmul_params(model)
    assert n == sum(p.numel() for p in model.parameters()) - model.transformer.wpe.weight.numel()
    assert cb.monitor.flops_per_step == 6 * n * B * T
    assert trainer.state.log_history[-2]["throughput/tflops"] > 0


# ---- Lightning ----------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:.*LeafSpec.*")  # inside Lightning's own pytree helper
def test_lightning_callback_logs_real_metrics(tmp_path, caplog):
    pl = pytest.importorskip("lightning.pytorch", reason=f"lightning not installed ({EXTRA})")
    pytest.importorskip("tensorboard", reason=f"tensorboard not installed ({EXTRA})")
    from lightning.pytorch.loggers import TensorBoardLogger

    from trainprof.integrations.lightning import TrainprofCallback

    class TinyGPT(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = GPT(TINY)

        def forward(self, x, y):
            return self.model(x, y)

        def training_step(self, batch, batch_idx):
            loss = self(*batch)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(_batches(12), batch_size=None)
    cb = TrainprofCallback(run_json=str(tmp_path / "run.json"))
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, max_steps=5, accumulate_grad_batches=2, log_every_n_steps=1,
        logger=TensorBoardLogger(str(tmp_path), name="pl"), enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, callbacks=[cb],
    )
    with caplog.at_level(logging.INFO, logger="trainprof.integrations"):
        trainer.fit(TinyGPT(), loader)

    assert cb.flops_method == "FlopCounterMode" and "FlopCounterMode" in caplog.text
    assert len(cb.monitor.steps) == 5 and cb.monitor.steps[-1].tokens == 2 * B * T  # 2 batches/step
    m = trainer.logged_metrics
    _assert_real(float(m["throughput/tokens_per_sec"]), float(m["throughput/tflops"]),
                 float(m["throughput/mfu"]))
    for k in ("time/step_s", "time/forward_s", "time/backward_s", "time/optimizer_s"):
        assert float(m[k]) > 0, k
    s = cb.summary
    assert s is not None and s.measured_steps == 4
    _assert_real(s.tokens_per_s, s.tflops, s.mfu)
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["config"]["integration"] == "lightning" and run["flops"]["method"] == "FlopCounterMode"
    # exact count: 2 batches of one forward+backward each, as collect/flops counts them
    from trainprof.collect.flops import count_train_step_flops

    x, y = _batches(1)[0]
    assert cb.monitor.flops_per_step == 2 * count_train_step_flops(GPT(TINY), (x, y))
    tags = _event_tags(tmp_path / "pl")
    for tag in ("throughput/tokens_per_sec", "throughput/tflops", "throughput/mfu", "time/step_s",
                "summary/throughput/mfu", "train_loss"):
        assert tag in tags, f"{tag} missing from {sorted(tags)}"
    assert all(0 < v < 1.5 for v in tags["throughput/mfu"])
    assert (tmp_path / "run.json").exists()
