"""`TrainprofCallback`: trainprof's step timing, FLOPs, TFLOPS, MFU and tokens/s in Lightning.

    from trainprof.integrations.lightning import TrainprofCallback
    trainer = L.Trainer(callbacks=[TrainprofCallback()], logger=TensorBoardLogger("runs"))
    trainer.fit(module, loader)

Uses `lightning.pytorch` (package `lightning`), or `pytorch_lightning` when only that is
installed; a callback must come from the same package as the Trainer.

One step is one optimizer step (it ends when `trainer.global_step` moves, so gradient
accumulation spans several batches). Phases from Lightning's hooks:
forward = on_train_batch_start → on_before_backward (training_step, zero_grad);
backward = on_before_backward → on_after_backward; optimizer = on_before_optimizer_step →
on_train_batch_end (gradient clipping, step). Data loading and the host-to-device copy happen
before on_train_batch_start and are not in the step. One device sync per step.
Tokens: `tokens_fn(batch)`, default the element count of the batch's first tensor (or
`input_ids`), padding included. FLOPs: counted once after the first step with
FlopCounterMode on its first batch (`loss_fn(module, batch)`, default `module(*batch)`),
× the step's batches; if that fails, 6·N·tokens with a warning (`flops_method` says which).

Logged each step with `pl_module.log_dict` (so `log_every_n_steps` applies):
throughput/tokens_per_sec, throughput/tflops, throughput/mfu (a fraction; absent when the
device peak is unknown), time/step_s, time/{forward,backward,optimizer,other}_s; at the end
the run summary as summary/... through `trainer.loggers`. `names="lightning"` logs
ThroughputMonitor's names (train/device/items_per_sec, train/device/flops_per_sec,
train/device/mfu) instead.
"""

from __future__ import annotations

from typing import Any, Callable

from trainprof.integrations._common import (
    PHASE_KEYS,
    THROUGHPUT_KEYS,
    MonitoredCallback,
    as_loss,
    dtype_from_precision,
    emit,
    named,
    safe_tokens,
    summary_metrics,
)

try:
    import lightning.pytorch as pl
except ImportError:
    try:
        import pytorch_lightning as pl  # the older package name, same API
    except ImportError as exc:
        raise ImportError(
            "trainprof.integrations.lightning needs Lightning: pip install 'trainprof[integrations]' "
            "(or: pip install lightning)"
        ) from exc

LOGGED = THROUGHPUT_KEYS + ("step_s",) + tuple(k for k in PHASE_KEYS if k not in ("data_s", "h2d_s"))


class TrainprofCallback(MonitoredCallback, pl.Callback):
    integration = "lightning"

    def __init__(
        self,
        *,
        flops_per_step: float | None = None,
        loss_fn: Callable[[Any, Any], Any] | None = None,
        tokens_fn: Callable[[Any], int] | None = None,
        peak_tflops: float | None = None,
        gpu_spec: str | None = None,
        warmup_steps: int = 1,
        names: str = "trainprof",
        prog_bar: bool = False,
        run_json: str | None = None,
    ) -> None:
        """`flops_per_step`: skip counting (model FLOPs of one optimizer step).
        `loss_fn(module, batch) -> loss` runs one batch when counting FLOPs. `tokens_fn(batch)`
        counts a batch's tokens. `peak_tflops`/`gpu_spec` override the device peak.
        `names`: trainprof | lightning | torchtitan. `prog_bar`: show the metrics in the
        progress bar. `run_json`: save run.json at the end of fit."""
        self._setup(flops_per_step=flops_per_step, loss_fn=loss_fn, tokens_fn=tokens_fn, peak_tflops=peak_tflops,
                    gpu_spec=gpu_spec, warmup_steps=warmup_steps, names=names, run_json=run_json)
        self.prog_bar = prog_bar
        self._global_step = 0

    # ---- set-up and tear-down -----------------------------------------------------------
    def on_train_start(self, trainer, pl_module):
        self._global_step = trainer.global_step
        self._start(pl_module.device, dtype_from_precision(trainer.precision))

    def on_train_end(self, trainer, pl_module):
        s = self._finish()
        if s is None:
            return
        metrics = named(summary_metrics(s, LOGGED), self.names, prefix="summary/")
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=trainer.global_step)
            logger.save()

    # ---- the step -------------------------------------------------------------------------
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        d = self._driver
        if d is None:
            return
        if not d.in_step:
            self._losses = []
            d.begin()
        d.tokens += safe_tokens(batch, self.tokens_fn, self.warnings)
        d.forwards += 1
        if self._first is None and self.monitor.flops_per_step is None:
            self._first = batch
        d.switch("forward")

    def on_before_backward(self, trainer, pl_module, loss):
        if self._driver is not None:
            self._driver.switch("backward")

    def on_after_backward(self, trainer, pl_module):
        if self._driver is not None:
            self._driver.switch(None)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if self._driver is not None:
            self._driver.switch("optimizer")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        d = self._driver
        if d is None or not d.in_step:
            return
        try:
            self._losses.append(as_loss(outputs).detach())
        except TypeError:
            pass
        if trainer.global_step == self._global_step:
            d.switch(None)  # accumulating: the step goes on with the next batch
            return
        self._global_step = trainer.global_step
        forwards = d.forwards
        rec = d.end(sum(self._losses) / len(self._losses) if self._losses else None)
        self._warned = emit(self.warnings, self._warned)
        if self.monitor.flops_per_step is None and self._first is not None:
            self._count_flops_once(pl_module, rec.tokens // max(forwards, 1), forwards)
        metrics = self._step_metrics([rec], LOGGED)
        pl_module.log_dict(metrics, on_step=True, on_epoch=False, prog_bar=self.prog_bar,
                           logger=True, batch_size=1)
        self.last_metrics = metrics

    def _count_flops_once(self, pl_module: Any, tokens: int, batches: int) -> None:
        batch, self._first = self._first, None
        user = self.loss_fn

        def loss_fn(module: Any, b: Any) -> Any:
            if user is not None:
                return as_loss(user(module, b))
            return as_loss(module(*b) if isinstance(b, (tuple, list)) else module(b))

        self._count_flops(pl_module, batch, tokens, batches, loss_fn)
