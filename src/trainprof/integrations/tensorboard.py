"""Write a Monitor's per-step metrics and its summary to TensorBoard.

    from trainprof.integrations.tensorboard import TensorBoardWriter

    mon = trainprof.Monitor(device="cuda", dtype="bf16", tokens_per_step=B * T)
    tb = TensorBoardWriter("runs/tb").watch(mon)     # becomes mon.on_step (keeps an existing hook)
    ... train with `with mon.step() as s: ...` ...
    tb.close()                                       # + the summary, then flush

Per step: throughput/tokens_per_sec, throughput/tflops, throughput/mfu (a fraction),
time/step_s, time/{data,h2d,forward,backward,optimizer,other}_s, loss. `names="lightning"`
or `names="torchtitan"` writes those projects' names instead (docs/integrations.md).
Needs the `tensorboard` package (torch.utils.tensorboard imports it).
"""

from __future__ import annotations

from typing import Any, Collection

from trainprof.integrations._common import named, summary_metrics, window_metrics
from trainprof.recordtypes.run import DeviceInfo, StepRecord, Summary

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError as exc:  # torch raises this when the tensorboard package is missing
    raise ImportError(
        "trainprof.integrations.tensorboard needs the tensorboard package: "
        "pip install 'trainprof[integrations]' (or: pip install tensorboard)"
    ) from exc


class TensorBoardWriter:
    def __init__(
        self,
        log_dir: str | None = None,
        *,
        writer: Any = None,
        names: str = "trainprof",
        include: Collection[str] | None = None,
        flops_per_step: float | None = None,
        peak_tflops: float | None = None,
    ) -> None:
        """`writer`: an existing SummaryWriter (shared with other logging) instead of `log_dir`.
        `include`: canonical keys to write (tokens_per_sec, tflops, mfu, hfu, step_s, data_s,
        ..., loss); all by default. `flops_per_step`/`peak_tflops` serve a writer used as a
        plain `on_step` hook without `watch()`; a watched Monitor's own values win."""
        named({}, names)  # validate early
        self.writer = writer if writer is not None else SummaryWriter(log_dir=log_dir)
        self._owns_writer = writer is None
        self.names = names
        self.include = include
        self.flops_per_step = flops_per_step
        self.peak_tflops = peak_tflops
        self.monitor: Any = None
        self._chained: Any = None

    # ---- wiring -----------------------------------------------------------------------
    def watch(self, monitor: Any) -> TensorBoardWriter:
        """Become `monitor.on_step`; a hook already there is still called first."""
        self.monitor = monitor
        self._chained = monitor.on_step
        monitor.on_step = self
        return self

    def __call__(self, rec: StepRecord) -> None:
        if self._chained is not None:
            self._chained(rec)
        self.log_step(rec)

    # ---- writing ----------------------------------------------------------------------
    def _flops_and_peak(self) -> tuple[float | None, float | None, float | None]:
        m = self.monitor
        if m is None:
            return self.flops_per_step, None, self.peak_tflops
        return m.flops_per_step, m.hardware_flops_per_step, m.device_info.peak_tflops

    def log_step(self, rec: StepRecord, step: int | None = None) -> dict[str, float]:
        """Write one step's metrics at `step` (default: the record's own index); returns them."""
        flops, hw, peak = self._flops_and_peak()
        metrics = named(window_metrics([rec], flops_per_step=flops, hardware_flops_per_step=hw,
                                       peak_tflops=peak, include=self.include), self.names)
        self.write(metrics, rec.step if step is None else step)
        return metrics

    def write(self, metrics: dict[str, float], step: int) -> None:
        for tag, value in metrics.items():
            self.writer.add_scalar(tag, value, step)

    def log_summary(self, summary: Summary, device: DeviceInfo | None = None, *,
                    step: int | None = None, note: str = "") -> dict[str, float]:
        """The run summary as `summary/...` scalars plus one markdown text card, which says
        which peak MFU is measured against (datasheet, measured, user) and in which dtype."""
        step = summary.measured_steps + summary.warmup_steps if step is None else step
        metrics = named(summary_metrics(summary, self.include), self.names, prefix="summary/")
        self.write(metrics, step)
        rows = [("steps measured", f"{summary.measured_steps} (after {summary.warmup_steps} warm-up)"),
                ("tokens/s", f"{summary.tokens_per_s:,.0f}"),
                ("model TFLOPS", f"{summary.tflops:.3f} ({summary.flops_per_step / 1e9:.2f} GFLOP/step)"),
                ("MFU", "unknown (no peak)" if summary.mfu is None else f"{100 * summary.mfu:.1f}%"),
                ("step time", f"{1e3 * summary.step_time_s:.1f} ms mean")]
        if device is not None:
            peak = ("none" if device.peak_tflops is None
                    else f"{device.peak_tflops:.3f} TFLOP/s {device.peak_dtype} ({device.peak_source})")
            rows[:0] = [("device", f"{device.name} [{device.kind}]"), ("peak", peak)]
        if note:
            rows.append(("note", note))
        table = "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
        self.writer.add_text("trainprof/summary", table, step)
        return metrics

    def close(self) -> None:
        """Write the watched Monitor's summary (when it has steps and FLOPs), then flush."""
        m = self.monitor
        if m is not None and m.steps and m.flops_per_step:
            self.log_summary(m.summary(), m.device_info)
        self.writer.flush()
        if self._owns_writer:
            self.writer.close()

    def __enter__(self) -> TensorBoardWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
