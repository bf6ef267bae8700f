"""What the TensorBoard writer and the HF/Lightning callbacks share (no third-party imports here).

* metric names: one table per naming convention, so a dashboard built for Lightning's
  ThroughputMonitor or torchtitan's metrics finds our numbers under the names it knows;
* metrics over a window of StepRecords, computed with analysis/run/throughput.py (never here);
* driving a Monitor step from callback hooks (begin / phase switches / end);
* counting FLOPs once on the first batch, with a labelled 6N fallback.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Collection, Mapping, Sequence

import torch

from trainprof.analysis.run.throughput import per_second, tflops, utilisation
from trainprof.recordtypes.run import StepRecord, Summary

log = logging.getLogger("trainprof.integrations")

PHASE_KEYS = ("data_s", "h2d_s", "forward_s", "backward_s", "optimizer_s", "other_s")
THROUGHPUT_KEYS = ("tokens_per_sec", "tflops", "mfu", "hfu")

# canonical key -> (logged name, scale). MFU/HFU are fractions (Lightning) unless a convention
# says percent (torchtitan's "mfu(%)"). Keys a convention has no name for use the default's.
_DEFAULT: dict[str, tuple[str, float]] = {
    "tokens_per_sec": ("throughput/tokens_per_sec", 1.0),
    "tflops": ("throughput/tflops", 1.0),
    "mfu": ("throughput/mfu", 1.0),
    "hfu": ("throughput/hfu", 1.0),
    "step_s": ("time/step_s", 1.0),
    **{k: (f"time/{k}", 1.0) for k in PHASE_KEYS},
    "loss": ("loss", 1.0),
}
NAMES: dict[str, dict[str, tuple[str, float]]] = {
    "trainprof": _DEFAULT,
    # lightning/pytorch/callbacks/throughput_monitor.py: "{stage}/device/{items,flops}_per_sec",
    # "{stage}/device/mfu" (per device, FLOP/s not TFLOP/s, MFU a fraction).
    "lightning": {**_DEFAULT,
                  "tokens_per_sec": ("train/device/items_per_sec", 1.0),
                  "tflops": ("train/device/flops_per_sec", 1e12),
                  "mfu": ("train/device/mfu", 1.0),
                  "hfu": ("train/device/hfu", 1.0)},
    # torchtitan/components/metrics.py: "throughput(tps)" (tokens/s per device), "tflops",
    # "mfu(%)", "time_metrics/end_to_end(s)", "time_metrics/data_loading(s)".
    "torchtitan": {**_DEFAULT,
                   "tokens_per_sec": ("throughput(tps)", 1.0),
                   "tflops": ("tflops", 1.0),
                   "mfu": ("mfu(%)", 100.0),
                   "hfu": ("hfu(%)", 100.0),
                   "step_s": ("time_metrics/end_to_end(s)", 1.0),
                   "data_s": ("time_metrics/data_loading(s)", 1.0),
                   "loss": ("loss_metrics/global_avg_loss", 1.0)},
}


def named(metrics: Mapping[str, float], names: str = "trainprof", prefix: str = "") -> dict[str, float]:
    """Canonical keys → the convention's names (and units)."""
    table = NAMES.get(names)
    if table is None:
        raise ValueError(f"names must be one of {', '.join(NAMES)}, got {names!r}")
    return {prefix + table[k][0]: v * table[k][1] for k, v in metrics.items()}


def window_metrics(
    steps: Sequence[StepRecord],
    *,
    flops_per_step: float | None,
    peak_tflops: float | None,
    hardware_flops_per_step: float | None = None,
    include: Collection[str] | None = None,
) -> dict[str, float]:
    """Metrics over consecutive steps (one step, or all since the last log): totals over
    totals, like `summarise`. TFLOPS needs FLOPs; MFU also needs a known peak (else absent)."""
    n = len(steps)
    total_s = sum(s.step_time_s for s in steps)
    if n == 0 or total_s <= 0:
        return {}
    out: dict[str, float] = {"tokens_per_sec": per_second(sum(s.tokens for s in steps), total_s),
                             "step_s": total_s / n}
    for k in PHASE_KEYS:
        out[k] = sum(getattr(s, k) for s in steps) / n
    if flops_per_step:
        out["tflops"] = tflops(flops_per_step * n, total_s)
        mfu = utilisation(flops_per_step * n, total_s, peak_tflops)
        if mfu is not None:
            out["mfu"] = mfu
        if hardware_flops_per_step and hardware_flops_per_step != flops_per_step:
            hfu = utilisation(hardware_flops_per_step * n, total_s, peak_tflops)
            if hfu is not None:
                out["hfu"] = hfu
    losses = [s.loss for s in steps if s.loss is not None]
    if losses:
        out["loss"] = sum(losses) / len(losses)
    return {k: v for k, v in out.items() if include is None or k in include}


def summary_metrics(s: Summary, include: Collection[str] | None = None) -> dict[str, float]:
    """The run summary (measured steps, after warm-up) under the same canonical keys."""
    out: dict[str, float | None] = {
        "tokens_per_sec": s.tokens_per_s, "tflops": s.tflops, "mfu": s.mfu,
        "hfu": s.hfu if s.hardware_flops_per_step != s.flops_per_step else None,
        "step_s": s.step_time_s, **{k: getattr(s, k) for k in PHASE_KEYS}, "loss": s.loss_last,
    }
    return {k: v for k, v in out.items() if v is not None and (include is None or k in include)}


# ---- devices and dtypes ----------------------------------------------------------------
def backend_for(device: torch.device | str, warnings: list[str]) -> Any:
    """Our DeviceBackend for a torch device; None (with a warning) for kinds we cannot time."""
    from trainprof.backends import get_backend
    from trainprof.backends.cuda_state import current_device_index

    dev = torch.device(device)
    if dev.type == "cpu":
        return get_backend("cpu")
    if dev.type == "cuda":
        return get_backend(f"cuda:{dev.index if dev.index is not None else current_device_index()}")
    warnings.append(f"trainprof: device type {dev.type!r} is not supported (cpu, cuda): no metrics")
    return None


def dtype_from_precision(precision: str | None) -> str:
    """Lightning's precision strings ('bf16-mixed', '16-mixed', '32-true', ...) → our column."""
    p = str(precision or "32")
    if p.startswith("bf16"):
        return "bf16"
    if p.startswith("16"):
        return "fp16"
    return "fp32"


# ---- tokens and FLOPs --------------------------------------------------------------------
def first_tensor(x: Any) -> torch.Tensor | None:
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, Mapping):
        if isinstance(x.get("input_ids"), torch.Tensor):
            return x["input_ids"]
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        for item in x:
            t = first_tensor(item)
            if t is not None:
                return t
    return None


def count_tokens(batch: Any) -> int:
    """Tokens in a batch: `input_ids` (or the first tensor) element count, padding included
    (Lightning's items_per_sec counts the same way; FlopCounterMode counts padding too)."""
    t = first_tensor(batch)
    if t is None:
        raise ValueError("cannot count tokens in this batch: pass tokens_per_batch=")
    return int(t.numel())


def safe_tokens(batch: Any, tokens_fn: Callable[[Any], int] | None, warnings: list[str]) -> int:
    """Tokens in a batch; 0 with one warning (not a crash in someone's training) if uncountable."""
    try:
        return int(tokens_fn(batch)) if tokens_fn else count_tokens(batch)
    except ValueError as exc:
        msg = f"trainprof: {exc}; tokens/s will read 0"
        if msg not in warnings:
            warnings.append(msg)
        return 0


def matmul_params(model: torch.nn.Module) -> int:
    """Parameters used by non-embedding modules: a tied LM head counts (it is a matmul),
    lookup-only tables (position embeddings) do not, like nanoGPT's non_embedding count."""
    seen: dict[int, int] = {}
    for m in model.modules():
        if isinstance(m, torch.nn.Embedding):
            continue
        for p in m.parameters(recurse=False):
            seen[id(p)] = p.numel()
    return sum(seen.values())


def count_or_estimate(model: torch.nn.Module, batch: Any, tokens: int,
                      loss_fn: Callable[..., Any] | None, warnings: list[str]) -> tuple[float, str]:
    """FLOPs of one forward+backward on `batch`: FlopCounterMode (collect/flops.py) when it
    runs, else 6·N·tokens (Kaplan et al. 2020; no attention term) with a warning."""
    from trainprof.collect.flops import count_train_step_flops

    device = next(model.parameters()).device
    try:
        # One extra forward+backward; fork_rng keeps dropout's RNG stream as if it never ran.
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            flops = count_train_step_flops(model, batch, loss_fn)
        if flops > 0:
            return float(flops), "FlopCounterMode"
        why = "FlopCounterMode counted 0 FLOPs"
    except Exception as exc:  # noqa: BLE001 - any model may fail a generic call; we fall back
        why = f"FlopCounterMode failed ({type(exc).__name__}: {exc})"
    n = matmul_params(model)
    warnings.append(f"trainprof: {why}; using the 6N estimate (6 x {n:,} params x {tokens:,} tokens, "
                    "attention not counted). Pass flops_per_step= or loss_fn= for an exact count.")
    return 6.0 * n * tokens, "6N estimate"


def as_loss(out: Any) -> torch.Tensor:
    """The loss from what a model returned: a scalar, `.loss`, `["loss"]`, or the first item."""
    if isinstance(out, torch.Tensor):
        return out if out.dim() == 0 else out.float().sum()
    if getattr(out, "loss", None) is not None:
        return out.loss
    if isinstance(out, Mapping) and "loss" in out:
        return out["loss"]
    if isinstance(out, (list, tuple)) and out:
        return as_loss(out[0])
    raise TypeError(f"cannot find a loss in a {type(out).__name__}")


# ---- a Monitor step driven from hooks ----------------------------------------------------
class StepDriver:
    """Open a Monitor step in one hook and close it in another, switching phases in between.

    `Monitor.step()` and `phase()` are context managers; training-loop hooks are separate
    calls, so we enter and exit them by hand. At most one phase is open at a time.
    """

    def __init__(self, monitor: Any) -> None:
        self.monitor = monitor
        self._step: Any = None
        self._handle: Any = None
        self._phase: Any = None
        self.tokens = 0
        self.forwards = 0

    @property
    def in_step(self) -> bool:
        return self._step is not None

    def begin(self) -> None:
        if self._step is not None:
            self.abort()
        self.tokens, self.forwards = 0, 0
        self._step = self.monitor.step()
        self._handle = self._step.__enter__()

    def switch(self, phase: str | None) -> None:
        """Close the open phase (if any) and open `phase` (None: leave none open)."""
        if self._step is None:
            return
        if self._phase is not None:
            self._phase.__exit__(None, None, None)
            self._phase = None
        if phase is not None:
            self._phase = self._handle.phase(phase)
            self._phase.__enter__()

    def end(self, loss: Any = None) -> StepRecord | None:
        """Close the step (one device sync, in StepTimer.stop) and return its record."""
        if self._step is None:
            return None
        self.switch(None)
        self._handle.tokens = self.tokens
        self._handle.loss = loss
        step, self._step = self._step, None
        step.__exit__(None, None, None)
        return self.monitor.steps[-1]

    def abort(self) -> None:
        if self._step is not None:
            self.switch(None)  # close the phase normally: a dangling one would add a stale mark later
            step, self._step = self._step, None
            try:
                step.__exit__(RuntimeError, RuntimeError("step abandoned"), None)
            except RuntimeError:
                pass


def emit(warnings: list[str], start: int = 0) -> int:
    """Log warnings[start:] once; return the new start."""
    for w in warnings[start:]:
        log.warning(w)
    return len(warnings)


# ---- what both framework callbacks hold --------------------------------------------------
class MonitoredCallback:
    """Options, the Monitor with its StepDriver, the one FLOP count and the end-of-training
    summary, shared by the HF and Lightning callbacks (a mixin: each also subclasses its
    framework's callback class, which has no state of its own)."""

    integration = ""  # recorded as run.json's config.integration

    def _setup(self, *, flops_per_step: float | None, loss_fn: Callable[..., Any] | None,
               tokens_fn: Callable[[Any], int] | None, peak_tflops: float | None, gpu_spec: str | None,
               warmup_steps: int, names: str, run_json: str | None) -> None:
        named({}, names)  # an unknown naming convention fails at construction, not at the first log
        self.flops_per_step = flops_per_step
        self.flops_method = "user" if flops_per_step is not None else None
        self.loss_fn = loss_fn
        self.tokens_fn = tokens_fn
        self.peak_tflops = peak_tflops
        self.gpu_spec = gpu_spec
        self.warmup_steps = warmup_steps
        self.names = names
        self.run_json = run_json
        self.monitor: Any = None
        self.summary: Summary | None = None
        self.last_metrics: dict[str, float] = {}
        self.warnings: list[str] = []
        self._warned = 0
        self._driver: StepDriver | None = None
        self._first: Any = None
        self._losses: list[Any] = []

    def _start(self, device: torch.device | str, dtype: str) -> bool:
        """Make the Monitor for `device`; False (with a warning logged) where none can run."""
        from trainprof.collect.monitor import Monitor

        self.summary, self._first, self.monitor = None, None, None  # nothing left from an earlier fit
        backend = backend_for(device, self.warnings)
        if backend is None:
            self._warned = emit(self.warnings, self._warned)
            return False
        self.monitor = Monitor(backend, dtype=dtype, flops_per_step=self.flops_per_step,
                               peak_tflops=self.peak_tflops, gpu_spec=self.gpu_spec,
                               warmup_steps=self.warmup_steps)
        self.warnings += self.monitor.warnings
        self._warned = emit(self.warnings, self._warned)
        self._driver = StepDriver(self.monitor)
        return True

    def _finish(self) -> Summary | None:
        """Drop an unfinished step, then summarise, log one line and save run.json; None when
        no step was measured or FLOPs are unknown."""
        if self._driver is not None:
            self._driver.abort()
            self._driver = None
        mon = self.monitor
        if mon is None or not (mon.steps and mon.flops_per_step):
            return None
        s = self.summary = mon.summary()
        mfu = "unknown (no device peak)" if s.mfu is None else f"{100 * s.mfu:.3g}%"
        log.info("trainprof: %d steps measured: %.0f tokens/s, %.3g TFLOPS, MFU %s against %s "
                 "(%s; FLOPs by %s)", s.measured_steps, s.tokens_per_s, s.tflops, mfu,
                 mon.device_info.peak_source + " peak", mon.device_info.name, self.flops_method)
        if self.run_json:
            mon.save(self.run_json, flops={"method": self.flops_method}, config={"integration": self.integration})
        return s

    def _count_flops(self, model: torch.nn.Module, batch: Any, tokens: int, batches: int,
                     loss_fn: Callable[..., Any]) -> None:
        """Count one batch's FLOPs (or estimate them) and set the Monitor's per-step FLOPs."""
        flops, self.flops_method = count_or_estimate(model, batch, tokens, loss_fn, self.warnings)
        self.monitor.flops_per_step = flops * batches
        log.info("trainprof: %.3g FLOPs per step (%s, %d batch(es))",
                 self.monitor.flops_per_step, self.flops_method, batches)
        self._warned = emit(self.warnings, self._warned)

    def _step_metrics(self, steps: Sequence[StepRecord], include: Collection[str]) -> dict[str, float]:
        mon = self.monitor
        return named(window_metrics(steps, flops_per_step=mon.flops_per_step,
                                    hardware_flops_per_step=mon.hardware_flops_per_step,
                                    peak_tflops=mon.device_info.peak_tflops, include=include), self.names)
