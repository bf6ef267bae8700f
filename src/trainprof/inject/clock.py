"""One measured step, timed from the agent's hook events: `trainprof profile`'s step split.

In the training thread, the hooks report these events (agent.py):

    F    a root module's forward begins (a module with trainable parameters called by no
         other module: the model, or its DDP wrapper), with gradients enabled
    B0   the outermost backward begins (torch.autograd.backward; loss.backward() goes through it)
    B1   it returns
    O0   an optimizer's step() begins (the global step pre-hook)
    O1   a step() ends that is not the step boundary (another optimizer's)
    END  the step boundary: the stepping optimizer's post-hook, or the --step-marker's return

Each event takes a device mark (a CUDA event on the current stream on GPU, perf_counter on
CPU, as the Monitor's phases do: collect/timers.py), and the step ends with one synchronize.
Every interval between two consecutive events goes to one phase (`label`), so the phases
add up to the step; `other` is what no rule names (and on GPU the few µs by which the event
and host clocks disagree, clamped at 0). Data wait is the time from the step's start to its
first forward (the batch fetch, its copy to the device, zero_grad: issue #29's definition),
and from each backward's end to the next micro-batch's forward.

A closure loop (Lightning: forward and backward run inside optimizer.step(closure)) is
recognised in the step's own events: a forward or backward after the first O0. Then the time
before O0 is the batch fetch (data), and the time from the last backward to the boundary is
the optimizer's update.
"""

from __future__ import annotations

from typing import Any, Callable

from trainprof.recordtypes.run import StepRecord

START, F, B0, B1, O0, O1, END = "start", "F", "B0", "B1", "O0", "O1", "end"
PHASES = ("data", "forward", "backward", "optimizer", "other")


def label(a: str, b: str, closure: bool, in_optimizer: bool) -> str:
    """The phase of the interval from event `a` to event `b`. `closure`: this step runs its
    forward/backward inside optimizer.step(closure); `in_optimizer`: a step() is open at `a`."""
    if b == F:
        if a == F:
            return "forward"  # a second root module (a loss module with weights, a second model)
        return "other" if a == O0 else "data"  # O0 → F: the closure's own entry
    if b == B0:
        return "forward" if a == F else "other"  # forward includes a loss computed outside the model
    if b == B1:
        return "backward"
    if b == O0:
        if closure and a in (START, B1, O1):
            return "data"  # the batch the closure will use is fetched before step()
        return "optimizer" if a in (B1, O1) else "other"  # B1 → O0: unscale, clip_grad_norm_
    return "optimizer" if in_optimizer else "other"  # → O1 / END: the update, or host work after it


def split(kinds: list[str], seconds: list[float]) -> dict[str, float]:
    """Seconds per phase of one step: `kinds` its events (START first, END last), `seconds`
    the time between consecutive events (len(kinds) - 1 of them)."""
    if len(seconds) != len(kinds) - 1:
        raise ValueError(f"{len(kinds)} events need {len(kinds) - 1} intervals, got {len(seconds)}")
    first_o0 = kinds.index(O0) if O0 in kinds else len(kinds)
    closure = any(k in (F, B0) for k in kinds[first_o0:])
    out = dict.fromkeys(PHASES, 0.0)
    open_steps = 0
    for a, b, s in zip(kinds, kinds[1:], seconds):
        out[label(a, b, closure, open_steps > 0)] += s
        if b == O0:
            open_steps += 1
        elif b in (O1, END) and open_steps:
            open_steps -= 1
    return out


def _now_bytes(backend: Any) -> int | None:
    fn = getattr(backend, "memory_now_bytes", None)  # a user's own backend may lack it
    return fn() if fn is not None else None


class StepClock:
    """The events of the step in progress; `finish` turns them into its StepRecord."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.kinds = [START]
        self.t0 = backend.host_clock()  # before the first mark: on CPU the marks then fit inside the step
        self.marks = [backend.mark()]
        self.memory = [_now_bytes(backend)]  # in use at each event: the phases' memory (memory_by_phase)
        self.tokens = 0
        self.micro_batches = 0
        self.backward_passes = 0
        self.losses: list[Any] = []

    def event(self, kind: str) -> None:
        self.kinds.append(kind)
        self.marks.append(self.backend.mark())
        self.memory.append(_now_bytes(self.backend))

    def memory_at(self) -> dict[str, int]:
        """The most memory in use at each kind of boundary this step: "start", "forward end" (the
        backward begins: activations held), "backward end" (gradients), "step end" (after the
        optimizer: its states). Sampled at the boundaries: a peak inside a phase can be higher."""
        names = {START: "start", B0: "forward end", B1: "backward end", END: "step end"}
        out: dict[str, int] = {}
        for kind, m in zip(self.kinds, self.memory):
            if kind in names and m is not None:
                out[names[kind]] = max(out.get(names[kind], 0), m)
        return out

    def forward(self, args: tuple, kwargs: dict, count: Callable[[tuple, dict], int] | None) -> None:
        """A root forward; the first since the start, a backward or a step() begins a micro-batch."""
        if self.kinds[-1] != F:
            self.micro_batches += 1
            if count is not None:
                self.tokens += count(args, kwargs)
        self.event(F)

    def backward(self, loss: Any) -> None:
        self.backward_passes += 1
        if loss is not None:
            self.losses.append(loss)
        self.event(B0)

    def finish(self, step: int, tokens: int | None = None) -> StepRecord:
        """END, one synchronize, then the record (`tokens`: the user's --tokens-per-step)."""
        self.event(END)
        self.backend.synchronize()
        total = self.backend.host_clock() - self.t0
        seconds = [self.backend.seconds_between(a, b) for a, b in zip(self.marks, self.marks[1:])]
        p = split(self.kinds, seconds)
        covered = p["data"] + p["forward"] + p["backward"] + p["optimizer"]
        # the loss tensors are read after the synchronize: no extra stall
        loss = sum(float(t.detach().float()) for t in self.losses) if self.losses else None
        return StepRecord(step=step, step_time_s=total, data_s=p["data"], h2d_s=0.0, forward_s=p["forward"],
                          backward_s=p["backward"], optimizer_s=p["optimizer"],
                          other_s=max(0.0, total - covered), tokens=int(tokens if tokens is not None else self.tokens),
                          loss=loss)
