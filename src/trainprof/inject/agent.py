"""The agent: trainprof's hooks inside the profiled program (docs/profile.md).

Installed when the program imports torch (startup.py), in every process that carries the
configuration, and cheap until that process steps an optimizer:

* global optimizer step pre-/post-hooks (torch.optim.optimizer.register_optimizer_step_*):
  the post-hook of the first optimizer that steps is the step boundary, unless
  --step-marker names the function whose return is (marker.py);
* torch.autograd.backward wrapped (loss.backward() calls it): its outermost calls are the
  backward passes; more than one per step is gradient accumulation. A wrapper, not module
  backward hooks: those wrap every module's inputs and outputs (a cost per module, and an
  error on in-place ops on their views);
* GradScaler.scale wrapped, so the loss read for the record is the unscaled one.

The first step boundary in a process claims its rank (an O_EXCL file: one process per rank,
the rank of its process group, else $RANK, else 0): torchrun's agent, DataLoader workers and
launchers never step, so the training processes are the ones measured. Then, in steps
counted from 0 at the claim (W = --warmup, N = --steps, P = --profile-steps):

  step 0          the program's cold start
  step 1          global forward hooks find the root modules (a module with trainable
                  parameters called by no other module: the model or its DDP wrapper) and the
                  compute dtype; from step 2 on, one global forward pre-hook that acts on
                  those modules only (never a hook on the program's modules: it would travel
                  with them into torch.save and copy.deepcopy)
  step W-1        its FLOPs are counted with FlopCounterMode: one real step (window.py)
  steps W..W+N-1  measured (clock.py), one synchronize each
  step W+N        its FLOPs counted again: the check (the profiler's wait step)
  2 + P steps     under torch.profiler: wait, warm-up, P recorded (collect/profiler.py)

then the records are written, every hook comes off (one removed at the program's next
backward pass when torch is iterating its dict: handles.py) and the program runs on alone, or
stops there with --stop-after (SystemExit(0)). An error in trainprof's own code removes the hooks
and is reported by the parent: it never reaches the program.
"""

from __future__ import annotations

import atexit
import functools
import os
import threading
import weakref
from typing import Any

import torch

from trainprof.inject import ENV, interrupts, marker
from trainprof.inject.clock import B1, O0, O1
from trainprof.inject.detect import (compute_dtype, first_parameter, loader_settings, optimizer_device,
                                     sequence_first, trainable)
from trainprof.inject.handles import Handles
from trainprof.inject.options import AgentConfig
from trainprof.inject.window import Window


ACTIVE = ("armed", "measuring")
# the hook dicts torch iterates to call our hooks (handles.py: none is removed from inside its own loop)
OPT_PRE, OPT_POST = "optimizer step pre-hooks", "optimizer step post-hooks"
FWD_PRE, FWD_POST = "global forward pre-hooks", "global forward hooks"


def _guarded(where: str | None = None) -> Any:
    """A hook body, run from torch's loop over the hook dict `where` (None: a wrapper's call):
    trainprof's own errors switch the agent off instead of reaching the program."""
    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def hook(self: "Agent", *args: Any, **kwargs: Any) -> Any:
            if self.state not in ACTIVE:
                return None
            try:
                if where is None:
                    return fn(self, *args, **kwargs)
                with self.hooks.inside(where):
                    return fn(self, *args, **kwargs)
            except Exception as e:  # noqa: BLE001 - SystemExit (--stop-after) passes through
                self.fail(e)
                return None
        return hook
    return wrap


class Agent:
    def __init__(self, cfg: AgentConfig) -> None:
        self.cfg, self.opts = cfg, cfg.options
        self.state = "armed"  # armed → measuring (rank claimed) → done; off: another process has the rank
        self.hooks = Handles()
        self.patched: list[tuple[Any, str, Any]] = []  # (owner, name, original) to put back
        self.thread: int | None = None
        self.rank = 0
        self.seen = 0  # step boundaries seen since the claim (the schedule's step index)
        self.offset = 0  # + seen = the program's step number (1 when the marker missed a call)
        self.depth = 0  # backward nesting (reentrant checkpointing calls backward inside backward)
        self.fdepth = 0  # module call nesting while roots are looked for
        self.backward_passes = 0
        self.optimizer_steps: dict[str, int] = {}
        self.stepper: Any = None  # weakref to the optimizer whose post-hook is the boundary
        self.roots: list[torch.nn.Module] = []
        self.root_ids: frozenset[int] = frozenset()
        self.discovery: list[Any] = []
        self.dtype: tuple[str, str] | None = None
        self.scaled: tuple[int, Any] = (0, None)  # (id of the last GradScaler-scaled loss, the unscaled one)
        self.marker: tuple[Any, str, Any] | None = None
        self.loaders: dict[int, dict[str, Any]] = {}  # id → settings of the DataLoaders iterated so far
        self.last_loader: int | None = None
        self.train_loader: dict[str, Any] | None = None  # the one iterated last before the claim
        self.win: Window | None = None
        self.error: str | None = None
        self.knobs: Any = None  # knobs.KnobPatches: `trainprof tune -- COMMAND`'s trial knobs; None for `profile`

    # ---- install / remove ------------------------------------------------------------------
    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self.hooks.add(OPT_PRE, register_optimizer_step_pre_hook(self._opt_pre))
        self.hooks.add(OPT_POST, register_optimizer_step_post_hook(self._opt_post))
        self._patch(torch.autograd, "backward", self._wrap_backward(torch.autograd.backward))
        from torch.amp.grad_scaler import GradScaler

        self._patch(GradScaler, "scale", self._wrap_scale(GradScaler.scale))
        from torch.utils.data import DataLoader

        self._patch(DataLoader, "__iter__", self._wrap_iter(DataLoader.__iter__))
        atexit.register(self._at_exit)
        import trainprof.inject.part  # noqa: F401 - what _at_exit writes with, imported now (_preload says why)

        self._find_marker()
        if self.cfg.knobs.set():  # a tune trial's knobs (inject/knobs.py); never for `trainprof profile`
            from trainprof.inject.knobs import KnobPatches

            self.knobs = KnobPatches(self, self.cfg.knobs)
            self.knobs.install()
            if self.cfg.knobs.model:  # the model from step 0, so that autocast/compile act from step 1 on
                self._discovery(True)

    def _patch(self, owner: Any, name: str, new: Any) -> None:
        self.patched.append((owner, name, getattr(owner, name)))
        setattr(owner, name, new)

    def uninstall(self) -> None:
        """Every hook off and every wrapper back, except what cannot go yet: a hook whose dict
        torch is iterating now waits (handles.py), and the backward wrapper stays to remove it
        at the program's next backward pass (`_sweep`)."""
        self.hooks.remove_all()
        if self.knobs is not None:
            self.knobs.restore()
        keep = []
        for owner, name, original in reversed(self.patched):
            current = getattr(owner, name, None)
            if self.hooks.pending and owner is torch.autograd and name == "backward":
                keep.append((owner, name, original))
            elif getattr(current, "__trainprof_agent__", False) or getattr(current, "__trainprof_marker__", False):
                setattr(owner, name, original)  # only if still ours: the program may have replaced it
        self.patched = keep
        self.roots, self.root_ids = [], frozenset()

    def _sweep(self) -> None:
        """At a backward pass after the agent stopped: remove the hooks that waited, then the
        backward wrapper itself (setattr is safe at any time; no hook dict is iterated here)."""
        self.hooks.sweep()
        if not self.hooks.pending:
            for owner, name, original in self.patched:
                if getattr(getattr(owner, name, None), "__trainprof_agent__", False):
                    setattr(owner, name, original)
            self.patched = []

    def fail(self, e: BaseException) -> None:
        import sys
        import traceback

        where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        self.error = f"{type(e).__name__}: {e}" + (f" ({where.filename}:{where.lineno})" if where else "")
        self.state = "failed"
        if self.win is not None:
            self.win.abort()
        self.uninstall()
        from trainprof.controls import one_line  # an error can quote the program's values: shown, never sent

        sys.stderr.write(f"trainprof: profiling stopped by an error of trainprof's own ({one_line(self.error)}); "
                         "the program continues\n")

    # ---- the wrappers ------------------------------------------------------------------------
    def _wrap_backward(self, original: Any) -> Any:
        @functools.wraps(original)
        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if self.state not in ACTIVE:  # stopped: only here to sweep what waited (uninstall)
                self._sweep()
                return original(tensors, *args, **kwargs)
            outer = self.depth == 0
            self.depth += 1
            try:
                if outer:
                    self._backward_begins(tensors)
                return original(tensors, *args, **kwargs)
            finally:
                self.depth -= 1
                if outer:
                    self._backward_ends()

        backward.__trainprof_agent__ = True  # type: ignore[attr-defined]
        return backward

    def _wrap_iter(self, original: Any) -> Any:
        """DataLoader.__iter__ (once per epoch): which loaders the program iterates, and how they
        are set up, so no finding tells it to use what it already uses (issue #37: a program
        with 4 workers was told to use workers)."""
        @functools.wraps(original)
        def __iter__(loader: Any) -> Any:
            if self.state in ACTIVE:
                try:
                    self.loaders[id(loader)] = loader_settings(loader)
                    self.last_loader = id(loader)
                except Exception:  # noqa: BLE001 - a loader we cannot read is not the program's problem
                    pass
            return original(loader)

        __iter__.__trainprof_agent__ = True  # type: ignore[attr-defined]
        return __iter__

    def _wrap_scale(self, original: Any) -> Any:
        @functools.wraps(original)
        def scale(scaler: Any, outputs: Any) -> Any:
            out = original(scaler, outputs)
            if isinstance(outputs, torch.Tensor):
                self.scaled = (id(out), outputs)
            return out

        scale.__trainprof_agent__ = True  # type: ignore[attr-defined]
        return scale

    # ---- the hooks ---------------------------------------------------------------------------
    def _mine(self) -> bool:
        return self.thread == threading.get_ident()

    def _training_thread(self) -> bool:
        """The claimed thread; before the claim (a tune trial's knobs look for the model in step
        0) the main thread."""
        if self.thread is None:
            return threading.current_thread() is threading.main_thread()
        return self._mine()

    @_guarded()
    def _backward_begins(self, tensors: Any) -> None:
        self.backward_passes += 1
        self._find_marker()
        clock = self.win.clock if self.win is not None else None
        if clock is not None and self._mine():
            loss = None
            if isinstance(tensors, torch.Tensor) and tensors.numel() == 1:
                sid, unscaled = self.scaled
                loss = (unscaled if sid == id(tensors) else tensors).detach()
            clock.backward(loss)

    @_guarded()
    def _backward_ends(self) -> None:
        clock = self.win.clock if self.win is not None else None
        if clock is not None and self._mine():
            clock.event(B1)

    @_guarded(OPT_PRE)
    def _opt_pre(self, opt: Any, args: Any, kwargs: Any) -> None:
        self._find_marker()
        clock = self.win.clock if self.win is not None else None
        if clock is not None and self._mine():
            clock.event(O0)

    @_guarded(OPT_POST)
    def _opt_post(self, opt: Any, args: Any, kwargs: Any) -> None:
        name = type(opt).__name__
        self.optimizer_steps[name] = self.optimizer_steps.get(name, 0) + 1
        if self.opts.step_marker is None:
            if self.stepper is None:
                self.stepper = weakref.ref(opt)
            if self.stepper() is opt:
                with interrupts.deferred():
                    self._boundary()
                return
        clock = self.win.clock if self.win is not None else None
        if clock is not None and self._mine():
            clock.event(O1)

    @_guarded()
    def _marker_returns(self) -> None:
        with interrupts.deferred():
            self._boundary()

    @_guarded(FWD_PRE)
    def _root_forward(self, module: Any, args: tuple) -> None:
        """A global forward pre-hook, for the root modules only: a hook on the program's own modules
        would travel with them into `torch.save(model)` (pickle failed on it: "cannot pickle
        'module' object") and `copy.deepcopy(model)` (an EMA copy). Global pre-hooks get no
        keyword arguments: the root's are read from Module._call_impl's frame (Hugging Face
        passes input_ids=). Cost: one Python call per module call in the window."""
        if id(module) not in self.root_ids:
            return
        kwargs = _call_kwargs()
        if self.depth or not self._mine() or not torch.is_grad_enabled():
            return  # a recomputation inside backward, another thread, an evaluation
        clock = self.win.clock if self.win is not None else None
        if clock is not None:
            clock.forward(args, kwargs, None if self.opts.tokens_per_step else self.win.count)

    @_guarded(FWD_PRE)
    def _discover_pre(self, module: Any, args: tuple) -> None:
        if not self._training_thread():
            return
        if self.fdepth == 0 and not self.depth and torch.is_grad_enabled() \
                and not any(m is module for m in self.roots) and trainable(module):
            self.roots.append(module)
            if self.dtype is None:
                p = first_parameter(module)
                self.dtype = compute_dtype(p.device.type if p is not None else "cpu", p)
        self.fdepth += 1

    @_guarded(FWD_POST)
    def _discover_post(self, module: Any, args: tuple, out: Any) -> None:
        if self._training_thread():
            self.fdepth = max(0, self.fdepth - 1)

    # ---- the schedule ------------------------------------------------------------------------
    # complexity 19 (C901), kept: the whole step schedule, read in order in one place; it runs
    # inside the program's step, where a Ctrl-C (KeyboardInterrupt) may land between any two calls
    def _boundary(self) -> None:  # noqa: C901
        if self.thread is None and not self._claim():
            return
        if not self._mine():
            return
        w, k = self.win, self.seen
        W, N, P = self.opts.warmup, self.opts.steps, self.opts.monitor.profile_steps
        if w.clock is not None:
            w.finish_step(self.offset + k)
        if w.prof is not None:
            w.profiled_step_done()
        early = self.knobs is not None and self.cfg.knobs.model  # roots looked for since the import of torch
        if k == 0 and self.knobs is not None:
            self.knobs.at_claim()
        if k == 0:
            self._discovery(not early)
            if early:
                self.knobs.on_roots(self.roots)
        if k == 1 and not early:
            self._discovery(False)
        if self.knobs is not None and k < W:
            self.knobs.mark()  # the warm-up steps' times: a compilation shows there (compile_s)
        if k == W - 2:
            w.start_flops()
        if k == W - 1:
            w.stop_flops(self.offset + k)
            if not w.start_measuring(self._device(), self._dtype()):
                return self._finish(complete=False)
        if W - 1 <= k < W + N - 1:
            w.begin_step()
        if k == W + N - 1:
            w.start_flops()  # the check: the step after the measured ones (the profiler's wait step)
            if P:
                w.start_profiler(self.offset + k + 1)  # the program's next step: profile_block's numbers
        if k == W + N:
            w.stop_flops(self.offset + k)
        self.seen += 1
        if k == W + N + (P + 1 if P else 0):
            self._finish(complete=True)
            if self.opts.stop_after:
                raise SystemExit(0)

    def _claim(self) -> bool:
        rank = _rank()
        try:
            os.close(os.open(os.path.join(self.cfg.parts, f"claim-rank{rank}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except OSError:  # another process has this rank, or the run folder is gone
            self.state = "off"
            self.uninstall()
            return False
        self.thread, self.rank, self.state = threading.get_ident(), rank, "measuring"
        self.win = Window(self.cfg, rank)
        self.train_loader = self.loaders.get(self.last_loader) if self.last_loader is not None else None
        _preload()
        # the program's environment back as it was: processes it starts from now on are its own
        os.environ.pop(ENV, None)
        if self.cfg.pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self.cfg.pythonpath
        return True

    def _discovery(self, on: bool) -> None:
        from torch.nn.modules import module as nn_module

        if on:
            self.discovery = [self.hooks.add(FWD_PRE, nn_module.register_module_forward_pre_hook(self._discover_pre)),
                              self.hooks.add(FWD_POST, nn_module.register_module_forward_hook(
                                  self._discover_post, always_call=True))]
            return
        for h in self.discovery:
            self.hooks.remove(h)
        self.root_ids = frozenset(id(m) for m in self.roots)
        if self.roots:
            self.hooks.add(FWD_PRE, nn_module.register_module_forward_pre_hook(self._root_forward))
        if self.win is not None:
            self.win.layout = sequence_first(self.roots)

    def _device(self) -> Any:
        for m in self.roots:
            p = first_parameter(m)
            if p is not None:
                return p.device
        opt = self.stepper() if self.stepper is not None else None
        return optimizer_device(opt) or torch.device("cpu")

    def _dtype(self) -> str:
        if self.opts.dtype != "auto":
            self.dtype = (self.opts.dtype, "--dtype")
        elif self.dtype is None:  # no root module seen: the stepping optimizer's parameters
            opt = self.stepper() if self.stepper is not None else None
            p = next((q for g in getattr(opt, "param_groups", []) for q in g.get("params", [])), None)
            self.dtype = compute_dtype(self._device().type, p)
        return self.dtype[0]

    def _find_marker(self) -> None:
        if self.opts.step_marker is None or self.marker is not None:
            return
        found = marker.resolve(self.opts.step_marker)
        if found is None or getattr(found[2], "__trainprof_marker__", False):
            return
        owner, name, stored = found
        if marker.in_progress(stored) and self.seen == 0:
            self.offset = 1  # the call running now ends step 0, unseen
        self.marker = found
        self.patched.append((owner, name, stored))
        setattr(owner, name, marker.wrap(stored, self._marker_returns))

    # ---- the records -------------------------------------------------------------------------
    def _finish(self, complete: bool) -> None:
        from trainprof.inject.part import extra_fields, profile_block

        w = self.win
        if not complete:
            w.abort()
        profile, extra = profile_block(self, complete), extra_fields(self, w)
        self.uninstall()  # before writing: the rest of the run is the program alone
        self.state = "done"
        w.write(profile, extra)

    def _at_exit(self) -> None:
        """The program ends: keep what was measured if the window did not complete."""
        try:
            if self.win is not None and self.state in ("measuring", "failed"):
                self._finish(complete=False)
            elif self.state in ("armed", "failed") and (self.backward_passes or self.error
                                                        or os.getppid() == self.cfg.parent_pid):
                from trainprof.inject.part import write_unclaimed

                write_unclaimed(self)
        except Exception:  # noqa: BLE001 - the program's exit must not change
            pass
        finally:
            self.uninstall()


_CALL_IMPL = torch.nn.Module._call_impl.__code__


def _call_kwargs() -> dict:
    """The keyword arguments of the module call whose global pre-hooks run now: the `kwargs` of
    the nearest Module._call_impl frame (a few frames up: this hook, its guard, _call_impl)."""
    import sys

    frame = sys._getframe(2)
    for _ in range(6):
        if frame is None:
            break
        if frame.f_code is _CALL_IMPL:
            kw = frame.f_locals.get("kwargs")
            return kw if isinstance(kw, dict) else {}
        frame = frame.f_back
    return {}


def _preload() -> None:
    """Import now what writing the records needs, so nothing is imported at exit: an import then
    can end the program with exit code 1 where it would have died of its KeyboardInterrupt (130).
    CPython turns an uncaught KeyboardInterrupt into a SIGINT exit only if no code object was
    evaluated through its run-code path after it (pythonrun.c: run_eval_code_obj resets
    _Py_UnhandledKeyboardInterrupt); importing msgspec at exit did (measured: exit 1)."""
    import msgspec  # noqa: F401
    import trainprof.collect.monitor  # noqa: F401
    import trainprof.controls  # noqa: F401
    import trainprof.inject.part  # noqa: F401
    import trainprof.recordtypes.run  # noqa: F401
    import trainprof.workload.trainer  # noqa: F401


def _rank() -> int:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0
