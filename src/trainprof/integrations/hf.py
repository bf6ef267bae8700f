"""`TrainprofCallback`: trainprof's step timing, FLOPs, TFLOPS, MFU and tokens/s in `transformers.Trainer`.

    from trainprof.integrations.hf import TrainprofCallback, attach
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    cb = attach(trainer, tensorboard_dir="runs/tb")   # or Trainer(..., callbacks=[TrainprofCallback()])
    trainer.train()
    print(cb.summary)

What it measures, per optimizer step (on_step_begin → on_step_end, one device sync at the end):
* forward: the model's forward (a forward pre-hook and hook on the model; exact);
* backward: from the end of a forward to the next forward or to on_pre_optimizer_step:
  backward, grad clipping and the next micro-batch's host-to-device copy;
* optimizer: on_pre_optimizer_step → on_optimizer_step (exact);
* not data loading: the Trainer fetches the step's batches before on_step_begin.
Tokens: `input_ids` elements seen by the model's forward (padding included).
FLOPs: counted once, after the first step, with FlopCounterMode on the first micro-batch
(collect/flops.py; one extra forward+backward, gradients and RNG restored) × the step's
micro-batches; if that fails, 6·N·tokens with a warning. `flops_method` says which.

Keys added to the Trainer's logs (and `state.log_history`) at each logging step, as totals
over the steps since the previous log: throughput/tokens_per_sec, throughput/tflops,
throughput/mfu (a fraction; absent when the device peak is unknown), time/step_s and
time/{forward,backward,optimizer,other}_s. `attach()` places the callback before the
Trainer's reporting callbacks (report_to: tensorboard, wandb, ...), so they report these
keys too; a callback passed in `callbacks=[...]` runs after them and only reaches the logs,
`log_history` and the console.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from trainprof.integrations._common import (
    PHASE_KEYS,
    THROUGHPUT_KEYS,
    MonitoredCallback,
    as_loss,
    emit,
    safe_tokens,
)
from trainprof.recordtypes.run import StepRecord

try:
    from transformers import TrainerCallback
except ImportError as exc:
    raise ImportError(
        "trainprof.integrations.hf needs transformers (and accelerate for Trainer): "
        "pip install 'trainprof[integrations]'"
    ) from exc

# Phases this callback measures; data and h2d are outside its step (see the module docstring).
LOGGED = THROUGHPUT_KEYS + ("step_s",) + tuple(k for k in PHASE_KEYS if k not in ("data_s", "h2d_s"))


class TrainprofCallback(MonitoredCallback, TrainerCallback):
    integration = "transformers.Trainer"

    def __init__(
        self,
        *,
        flops_per_step: float | None = None,
        loss_fn: Callable[[Any, dict[str, Any]], Any] | None = None,
        tokens_fn: Callable[[dict[str, Any]], int] | None = None,
        peak_tflops: float | None = None,
        gpu_spec: str | None = None,
        warmup_steps: int = 1,
        names: str = "trainprof",
        tensorboard_dir: str | None = None,
        run_json: str | None = None,
    ) -> None:
        """`flops_per_step`: skip counting (model FLOPs of one optimizer step).
        `loss_fn(model, inputs) -> loss`: how to run one micro-batch when counting FLOPs;
        default `model(**inputs)` and its `.loss`. `tokens_fn(inputs) -> int`: tokens in a
        micro-batch; default the element count of `input_ids`. `peak_tflops`/`gpu_spec`:
        override the device peak (as `trainprof run --peak-tflops/--gpu-spec`).
        `names`: trainprof | lightning | torchtitan metric names. `tensorboard_dir`: also
        write per-step metrics and the summary there. `run_json`: save run.json at the end."""
        self._setup(flops_per_step=flops_per_step, loss_fn=loss_fn, tokens_fn=tokens_fn, peak_tflops=peak_tflops,
                    gpu_spec=gpu_spec, warmup_steps=warmup_steps, names=names, run_json=run_json)
        self.tensorboard_dir = tensorboard_dir
        self.writer: Any = None
        self._model: Any = None
        self._hooks: list[Any] = []
        self._counting = False
        self._summed_loss = False
        self._window: list[StepRecord] = []

    # ---- set-up and tear-down -----------------------------------------------------------
    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._window = []
        dtype = "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"
        if not self._start(next(model.parameters()).device, dtype):
            return
        self._model = model
        self._hooks = [model.register_forward_pre_hook(self._before_forward, with_kwargs=True),
                       model.register_forward_hook(self._after_forward, with_kwargs=True)]
        if self.tensorboard_dir is not None:
            from trainprof.integrations.tensorboard import TensorBoardWriter

            self.writer = TensorBoardWriter(self.tensorboard_dir, names=self.names, include=LOGGED)
            self.writer.monitor = self.monitor  # reads FLOPs and peak; per-step writes are ours

    def on_train_end(self, args, state, control, **kwargs):
        if self._driver is None:
            return
        for h in self._hooks:
            h.remove()
        self._hooks = []
        s = self._finish()
        if self.writer is not None:
            if s is not None:
                self.writer.log_summary(s, self.monitor.device_info, step=state.global_step,
                                        note=f"FLOPs by {self.flops_method}")
            self.writer.close()

    # ---- the model's forward --------------------------------------------------------------
    def _before_forward(self, module, args, kwargs):
        d = self._driver
        if self._counting or d is None or not d.in_step:
            return  # evaluation, or our own FLOP count
        d.switch("forward")
        d.tokens += safe_tokens(kwargs or args, self.tokens_fn, self.warnings)
        d.forwards += 1
        self._summed_loss = "num_items_in_batch" in kwargs
        if self._first is None and self.monitor.flops_per_step is None:
            self._first = (args, dict(kwargs))

    def _after_forward(self, module, args, kwargs, output):
        d = self._driver
        if self._counting or d is None or not d.in_step:
            return
        # Only a real loss: summing logits here would add work and mean nothing.
        loss = output if isinstance(output, torch.Tensor) else getattr(output, "loss", None)
        if isinstance(loss, torch.Tensor) and loss.dim() == 0:
            self._losses.append(loss.detach())
        d.switch("backward")

    # ---- the step -------------------------------------------------------------------------
    def on_step_begin(self, args, state, control, **kwargs):
        if self._driver is not None:
            self._losses = []
            self._driver.begin()

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        if self._driver is not None:
            self._driver.switch("optimizer")

    def on_optimizer_step(self, args, state, control, **kwargs):
        if self._driver is not None:
            self._driver.switch(None)

    def on_step_end(self, args, state, control, **kwargs):
        d = self._driver
        if d is None or not d.in_step:
            return
        # With num_items_in_batch the model returns each micro-batch's share of the step loss.
        loss = None
        if self._losses:
            total = sum(self._losses)
            loss = total if self._summed_loss else total / len(self._losses)
        forwards = d.forwards
        rec = d.end(loss)
        self._warned = emit(self.warnings, self._warned)
        if self.monitor.flops_per_step is None and self._first is not None:
            self._count_flops_once(rec.tokens // max(forwards, 1), forwards)
        self._window.append(rec)
        if self.writer is not None:
            self.writer.log_step(rec, step=state.global_step)

    def _count_flops_once(self, tokens: int, micro_batches: int) -> None:
        args, kwargs = self._first
        self._first = None
        user = self.loss_fn

        def loss_fn(model: Any, batch: Any) -> Any:
            return as_loss(user(model, kwargs) if user else model(*args, **kwargs))

        self._counting = True  # our own forward must not count as a step's
        try:
            self._count_flops(self._model, None, tokens, micro_batches, loss_fn)
        finally:
            self._counting = False

    # ---- logging --------------------------------------------------------------------------
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is None or "loss" not in logs or not self._window or self.monitor is None:
            return  # evaluation or end-of-training logs: no training steps to report
        metrics = self._step_metrics(self._window, LOGGED)
        self._window = []
        logs.update(metrics)
        # Trainer.log appended a copy of `logs` before calling us: complete that entry too.
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1].update(metrics)
        self.last_metrics = metrics


def attach(trainer: Any, callback: TrainprofCallback | None = None, **kwargs: Any) -> TrainprofCallback:
    """Add the callback right after the Trainer's DefaultFlowCallback, ahead of its reporting
    callbacks (TensorBoard, W&B, ...), so the keys it adds in on_log reach them too."""
    cb = callback if callback is not None else TrainprofCallback(**kwargs)
    from transformers.trainer_callback import DefaultFlowCallback

    callbacks = trainer.callback_handler.callbacks
    flow = [i for i, c in enumerate(callbacks) if isinstance(c, DefaultFlowCallback)]
    callbacks.insert(flow[0] + 1 if flow else 0, cb)
    return cb
