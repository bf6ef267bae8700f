"""Pipeline parallel: the GPT's blocks split into stages, run by torch.distributed.pipelining.

Stage s of p holds blocks [s·L/p, (s+1)·L/p); the first also the embeddings, the last the
final norm and the LM head. GPT-2 ties the head to the token embedding, which now live on
two ranks: the last stage keeps a copy and the two gradients are summed over a group of the
first and last stage after each step (Megatron-LM's embedding group), so the update equals
the unsplit model's.

Schedules: GPipe (all forwards, then all backwards) and 1F1B; both idle a stage for
(p−1)/(m+p−1) of the step with m micro-batches (the bubble: analysis/job/bubble.py, from the
per-micro-batch ranges `mark_microbatches` records).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F


class Stage(nn.Module):
    def __init__(self, gpt: Any, index: int, stages: int) -> None:
        super().__init__()
        n = len(gpt.blocks) // stages
        self.first, self.last = index == 0, index == stages - 1
        if self.first:
            self.wte, self.wpe = gpt.wte, gpt.wpe
        self.blocks = nn.ModuleList(gpt.blocks[index * n:(index + 1) * n])
        if self.last:
            self.ln_f = gpt.ln_f
            self.lm_head = nn.Linear(gpt.cfg.d_model, gpt.cfg.vocab_size, bias=False)
            with torch.no_grad():
                self.lm_head.weight.copy_(gpt.wte.weight)  # the tied copy (module docstring)
        self.delay_s = 0.0  # a planted imbalance: sleep this long per micro-batch forward (tests)
        self.split: Split | None = None  # the step's phases while a timed schedule runs (`timed`)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.first:
            x = self.wte(x) + self.wpe(torch.arange(x.shape[1], device=x.device))
        for b in self.blocks:
            x = b(x)
        if self.delay_s:
            import time

            from torch.profiler import record_function

            with record_function("trainprof.planted_delay"):  # the planted truth, as measured, in the trace
                time.sleep(self.delay_s)
        return self.lm_head(self.ln_f(x)) if self.last else x

    def tied(self) -> torch.Tensor | None:
        """The parameter tied across the first and last stage held here (None: neither)."""
        return self.wte.weight if self.first else self.lm_head.weight if self.last else None


def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), target.view(-1))


def build(gpt: Any, index: int, stages: int, group: Any, device: str, microbatches: int,
          schedule: str) -> tuple[Stage, Any]:
    """(the stage module, its schedule: `step(x, target=y, losses=[])` on the stages that
    take inputs or targets, `step()` on the others)."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    mod = Stage(gpt, index, stages).to(device)
    stage = PipelineStage(mod, index, stages, torch.device(device), group=group)
    mark_microbatches(stage, mod)
    cls = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[schedule]
    return mod, cls(stage, microbatches, loss_fn=staged_loss(mod))


def staged_loss(mod: Stage) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """loss_fn, timed as the last stage's `forward` while a timed schedule runs (Split): the
    schedule computes it outside forward_one_chunk, and it is compute, not a wait."""
    def loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        with mod.split.inside("forward") if mod.split is not None else contextlib.nullcontext():
            return loss_fn(logits, target)

    return loss


RANGE = "trainprof.pp_{kind} {i}"  # read back by analysis/job/pipeline_rank.py


def mark_microbatches(stage: Any, mod: Stage) -> None:
    """A `trainprof.pp_forward i` / `trainprof.pp_backward i` range around each micro-batch's
    forward and backward on this stage. torch 2.13 marks them (`Forward i`, with the receive)
    in GPipe only; 1F1B calls the same two methods of the stage without a range, so ours give
    every schedule's bubble (analysis/job/bubble.py). They hold the stage's compute, not its
    receives: the schedule waits for its input before calling them. A range costs ~1 µs.
    Each is also the step's `forward` or `backward` phase while `mod.split` is set (`timed`)."""
    from torch.profiler import record_function

    def ranged(fn: Any, kind: str) -> Any:
        def run(chunk: int, *args: Any, **kwargs: Any) -> Any:
            split = mod.split
            timing = split.inside(kind) if split is not None else contextlib.nullcontext()
            with record_function(RANGE.format(kind=kind, i=chunk)), timing:
                return fn(chunk, *args, **kwargs)

        return run

    stage.forward_one_chunk = ranged(stage.forward_one_chunk, "forward")
    stage.backward_one_chunk = ranged(stage.backward_one_chunk, "backward")


class Split:
    """A schedule's time in the step's phases: `forward` inside each micro-batch's forward
    (and the last stage's loss), `backward` inside each backward on the stage, `pipeline` the
    rest (receives, sends and the bubble: waiting for the other stages; collect/timers.py;
    in `other` the diagnosis would read them as host overhead, and in `forward`, as they were
    before, a stage's forward looked up to twice its compute). Phases are switched, never
    nested, so none is counted twice."""

    def __init__(self, phase: Callable[[str], Any]) -> None:
        self.phase = phase
        self._open: Any = None

    def __enter__(self) -> "Split":
        self._enter("pipeline")
        return self

    def __exit__(self, *exc: Any) -> None:
        self._leave()

    def _enter(self, name: str) -> None:
        self._open = self.phase(name)
        self._open.__enter__()

    def _leave(self) -> None:
        cm, self._open = self._open, None
        cm.__exit__(None, None, None)

    @contextlib.contextmanager
    def inside(self, kind: str) -> Iterator[None]:
        """`kind` (forward, backward) for the block, then the pipeline's waits again."""
        self._leave()
        self._enter(kind)
        try:
            yield
        finally:
            self._leave()
            self._enter("pipeline")


@contextlib.contextmanager
def timed(mod: Stage, phase: Callable[[str], Any] | None) -> Iterator[None]:
    """Run a schedule's step inside `phase`'s forward and backward (`Split`); None: untimed."""
    if phase is None:
        yield
        return
    with Split(phase) as split:
        mod.split = split
        try:
            yield
        finally:
            mod.split = None


def sync_tied(mod: Stage, group: Any) -> None:
    """Sum the tied embedding/head gradients of the first and last stage (`group` holds both)."""
    import torch.distributed as dist

    p = mod.tied()
    if p is not None and group is not None and p.grad is not None:
        dist.all_reduce(p.grad, group=group)
