"""The knobs `trainprof tune -- COMMAND` turns inside the program, one trial at a time.

Each is a change the user could write (ARCHITECTURE.md, "Inside the user's program"), made
from outside and recorded with the place in the program it touched, so the tuner can print
the patch that makes it permanent (tune/program.py):

* DataLoader settings: `DataLoader.__init__` wrapped; every DataLoader the program constructs
  gets the knob's keyword values (workers-only ones only where it has workers), and a value
  the program passed itself is recorded as overridden;
* fused / foreach optimizers: `__init__` of each torch.optim class that takes `fused` or
  `foreach` wrapped; fused where the class and every parameter's device allow it, else foreach;
* autocast (bf16; fp16 only where the program steps through an enabled GradScaler) and
  torch.compile on the root modules (the model the optimizer trains, agent.py's discovery),
  from step 1 on: an autocast forward pre-/post-hook (the output cast back to fp32, as
  `out = model(x).float()` would be), `torch.compile` of the module's `forward` (the agent's own
  hooks stay outside the compiled region; the user's patch is `model.compile()`);
* threads (`torch.set_num_threads`, kept over the program's own calls), GC (`gc.freeze()`
  after step 0, a larger generation-0 threshold), TF32 and cudnn.benchmark flags
  (backends/cuda_state.py).

Nothing here runs when no knob is set: `trainprof profile` never sets one. Every patch is put
back when the agent uninstalls (the objects already built keep their settings).
"""

from __future__ import annotations

import functools
import gc
import inspect
import os
import sys
import time
from typing import TYPE_CHECKING, Any

import torch

from trainprof.knobs import Knobs

if TYPE_CHECKING:
    from trainprof.inject.agent_view import AgentView

LOADER_KNOBS = ("num_workers", "persistent_workers", "prefetch_factor", "pin_memory")
WORKER_ONLY = ("persistent_workers", "prefetch_factor")  # DataLoader refuses them without workers
GC_THRESHOLD0 = 50_000  # generation 0 collected every 50k allocations instead of 700 (CPython's default)
AUTOCAST_PRE, AUTOCAST_POST = "root module forward pre-hooks", "root module forward hooks"
_SKIP_DIRS = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def call_site() -> str | None:
    """`train.py:42`: the first frame outside torch and trainprof (the program's line)."""
    f = sys._getframe(1)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_SKIP_DIRS) and not f.f_code.co_filename.startswith("<"):
            rel = os.path.relpath(path)
            return f"{path if rel.startswith('..') else rel}:{f.f_lineno}"
        f = f.f_back
    return None


def _kw(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


class KnobPatches:
    """The knobs of one trial, applied in the agent's process (agent.Agent holds one)."""

    def __init__(self, agent: "AgentView", knobs: Knobs) -> None:
        self.agent, self.k = agent, knobs
        self.applied: list[dict[str, Any]] = []  # {"knob", "object", "site", "set", "overrode"}
        self.not_applied: dict[str, str] = {}  # knob field → why not (here)
        self.restore_fns: list[Any] = []
        self.autocast_open: list[Any] = []
        self.marks: list[float] = []  # perf_counter at the step boundaries up to the window (compile time)
        self.threads_asked: list[dict[str, Any]] = []
        self.loaders = 0
        self.optimizers = 0
        self.scaler_enabled = False
        self.forward_site: str | None = None

    # ---- at import of torch -----------------------------------------------------------------
    def install(self) -> None:
        k = self.k
        if any(getattr(k, n) is not None for n in LOADER_KNOBS):
            from torch.utils.data import DataLoader

            self.agent._patch(DataLoader, "__init__", self._wrap_loader(DataLoader.__init__))
        if k.optimizer is not None:
            self._patch_optimizers()
        if k.threads is not None:
            self._threads()
        if k.tf32 or k.cudnn_benchmark:
            self._cuda_flags()
        if k.autocast == "fp16":
            from torch.amp.grad_scaler import GradScaler

            self.agent._patch(GradScaler, "__init__", self._wrap_scaler(GradScaler.__init__))

    def _cuda_flags(self) -> None:
        """TF32 and cudnn.benchmark: process-wide switches (backends/cuda_state.py), set before
        the program's own code runs (it may set them again: its value then wins)."""
        from trainprof.backends import cuda_state

        if self.k.tf32:
            was = cuda_state.tf32_state()
            cuda_state.set_tf32(True)
            self.restore_fns.append(lambda: cuda_state.restore_tf32(was))
            self.applied.append({"knob": "tf32", "object": "torch.backends", "site": None,
                                 "set": {"allow_tf32": True}, "overrode": {}})
        if self.k.cudnn_benchmark:
            before = cuda_state.cudnn_benchmark(True)
            self.restore_fns.append(lambda: cuda_state.cudnn_benchmark(before))
            self.applied.append({"knob": "cudnn_benchmark", "object": "torch.backends.cudnn", "site": None,
                                 "set": {"benchmark": True}, "overrode": {}})

    # ---- DataLoader ---------------------------------------------------------------------------
    def _wrap_loader(self, original: Any) -> Any:
        sig = inspect.signature(original)
        wanted = {n: getattr(self.k, n) for n in LOADER_KNOBS if getattr(self.k, n) is not None}
        depth = [0]

        @functools.wraps(original)
        def __init__(loader: Any, *args: Any, **kwargs: Any) -> None:
            if depth[0]:  # a subclass's __init__ calling ours: the outer call applied the knobs
                return original(loader, *args, **kwargs)
            depth[0] += 1
            try:
                given = self._guarded(lambda: self._loader_kwargs(sig, wanted, loader, args, kwargs))
                if given is None:  # the program's own call error, or ours: its call, unchanged
                    return original(loader, *args, **kwargs)
                return original(loader, **given)
            finally:
                depth[0] -= 1

        __init__.__trainprof_agent__ = True  # type: ignore[attr-defined]
        return __init__

    def _guarded(self, fn: Any) -> Any:
        """`fn()`, or None when it fails: an error of trainprof's own switches the agent off
        (agent.fail) and the program's call goes on as it was written."""
        try:
            return fn()
        except Exception as e:  # noqa: BLE001
            self.agent.fail(e)
            return None

    def _loader_kwargs(self, sig: Any, wanted: dict, loader: Any, args: tuple, kwargs: dict) -> dict | None:
        """The keyword arguments of the program's DataLoader call with the knobs' values in
        (workers-only ones only where it has workers); recorded with what they replaced."""
        try:
            bound = sig.bind(loader, *args, **kwargs)
        except TypeError:
            return None  # the program's own error: raised by its call, unchanged
        given = dict(bound.arguments)
        given.pop("self", None)
        given.update(given.pop("kwargs", None) or {})  # none in torch's signature; kept if a version adds one
        workers = wanted.get("num_workers", given.get("num_workers", 0))
        changed, overrode = {}, {}
        for name, value in wanted.items():
            if name in WORKER_ONLY and not workers:
                continue
            if given.get(name, sig.parameters[name].default) == value:
                continue
            if name in given:
                overrode[name] = given[name]
            given[name] = changed[name] = value
        self.loaders += 1
        if changed:
            self.applied.append({"knob": "dataloader", "object": type(loader).__name__,
                                 "site": call_site(), "set": changed, "overrode": overrode})
        return given

    # ---- optimizers ---------------------------------------------------------------------------
    def _patch_optimizers(self) -> None:
        import torch.optim as optim

        for name in sorted(dir(optim)):
            cls = getattr(optim, name)
            if not (isinstance(cls, type) and issubclass(cls, optim.Optimizer)) or "__init__" not in vars(cls):
                continue
            params = inspect.signature(cls.__init__).parameters
            if "fused" in params or "foreach" in params:
                self.agent._patch(cls, "__init__", self._wrap_optimizer(cls, cls.__init__, params))

    def _wrap_optimizer(self, cls: type, original: Any, params: Any) -> Any:
        sig = inspect.signature(original)
        depth = self._opt_depth = getattr(self, "_opt_depth", [0])  # one depth for all: AdamW calls Adam's

        @functools.wraps(original)
        def __init__(opt: Any, *args: Any, **kwargs: Any) -> None:
            if depth[0]:
                return original(opt, *args, **kwargs)
            depth[0] += 1
            try:
                plan = self._guarded(lambda: self._optimizer_plan(cls, sig, params, opt, args, kwargs))
                if plan is None:
                    return original(opt, *args, **kwargs)
                given, want, entry = plan
                if want is None:
                    return original(opt, **given)
                try:
                    original(opt, **{**given, **want})
                except (RuntimeError, ValueError, TypeError) as e:  # the class refused it: as the program had it
                    self.not_applied["optimizer"] = f"{cls.__name__}({_kw(want)}) refused: {e}"
                    return original(opt, **given)
                self.applied.append(entry)
                return None
            finally:
                depth[0] -= 1

        __init__.__trainprof_agent__ = True  # type: ignore[attr-defined]
        return __init__

    def _optimizer_plan(self, cls: type, sig: Any, params: Any, opt: Any, args: tuple,
                        kwargs: dict) -> tuple[dict, dict | None, dict] | None:
        """(the program's arguments, the knob's values or None, the record) for one optimizer."""
        try:
            bound = sig.bind(opt, *args, **kwargs)
        except TypeError:
            return None
        given = dict(bound.arguments)
        given.pop("self", None)
        ps = given.get("params")
        if ps is not None and not isinstance(ps, (list, tuple, torch.Tensor)):
            given["params"] = ps = list(ps)  # an iterator (model.parameters()) would be used up
        self.optimizers += 1
        want, why = self._impl(cls, params, given, ps)
        if want is None:
            self.not_applied["optimizer"] = f"{cls.__name__}: {why}"
            return given, None, {}
        overrode = {n: given[n] for n in ("fused", "foreach") if n in given and given[n] is not None
                    and given[n] != want.get(n)}
        entry = {"knob": "optimizer", "object": cls.__name__, "site": call_site(),
                 "set": {n: v for n, v in want.items() if v is not None}, "overrode": overrode}
        return given, want, entry

    def _impl(self, cls: type, params: Any, given: dict, ps: Any) -> tuple[dict | None, str]:
        """The keyword values to construct with, or (None, why not)."""
        if given.get("differentiable"):
            return None, "differentiable=True has no fused or foreach form"
        tensors = [p for g in (ps or []) for p in (g["params"] if isinstance(g, dict) else [g])]
        tensors = [p for p in tensors if isinstance(p, torch.Tensor)] or [p for p in (ps or [])
                                                                          if isinstance(p, torch.Tensor)]
        if self.k.optimizer == "fused" and "fused" in params:
            from torch.optim.optimizer import _get_fused_kernels_supported_devices

            ok = _get_fused_kernels_supported_devices()
            if tensors and all(p.device.type in ok and torch.is_floating_point(p) for p in tensors):
                return {"fused": True, "foreach": None} if "foreach" in params else {"fused": True}, ""
        if "foreach" in params:
            if given.get("foreach") is True and not given.get("fused"):
                return None, "already foreach=True"
            return ({"foreach": True, "fused": None} if "fused" in params else {"foreach": True}), ""
        return None, "takes neither fused= nor foreach= on these parameters"

    # ---- threads ------------------------------------------------------------------------------
    def _threads(self) -> None:
        n = self.k.threads
        original = torch.set_num_threads
        before = torch.get_num_threads()

        @functools.wraps(original)
        def set_num_threads(m: int) -> None:
            self.threads_asked.append({"site": call_site(), "value": m})
            return original(n)

        set_num_threads.__trainprof_agent__ = True  # type: ignore[attr-defined]
        original(n)
        self.agent._patch(torch, "set_num_threads", set_num_threads)
        self.applied.append({"knob": "threads", "object": "torch", "site": None, "set": {"threads": n},
                             "overrode": {"threads": before} if before != n else {}})
        self.restore_fns.append(lambda: original(self.threads_asked[-1]["value"] if self.threads_asked else before))

    # ---- GradScaler (fp16) ----------------------------------------------------------------------
    def _wrap_scaler(self, original: Any) -> Any:
        @functools.wraps(original)
        def __init__(scaler: Any, *args: Any, **kwargs: Any) -> None:
            original(scaler, *args, **kwargs)
            if getattr(scaler, "_enabled", False):
                self.scaler_enabled = True

        __init__.__trainprof_agent__ = True  # type: ignore[attr-defined]
        return __init__

    # ---- at the step boundaries --------------------------------------------------------------
    def mark(self) -> None:
        self.marks.append(time.perf_counter())

    def at_claim(self) -> None:
        """End of step 0: the program's setup is done (GC: what it built is frozen out of the
        collector's scans)."""
        if self.k.gc_freeze:
            old = gc.get_threshold()
            gc.collect()
            gc.freeze()
            gc.set_threshold(GC_THRESHOLD0, old[1], old[2])

            def back() -> None:
                gc.unfreeze()
                gc.set_threshold(*old)

            self.restore_fns.append(back)
            self.applied.append({"knob": "gc_freeze", "object": "gc", "site": None,
                                 "set": {"freeze": True, "threshold0": GC_THRESHOLD0}, "overrode": {"threshold0": old[0]}})

    def on_roots(self, roots: list[torch.nn.Module]) -> None:
        """The root modules are known (end of step 0): autocast and compile from step 1 on."""
        k = self.k
        if not roots:
            for name in ("autocast", "compile"):
                if getattr(k, name):
                    self.not_applied[name] = "no root module (a module with trainable parameters called by no " \
                                             "other module) ran in step 0 on the training thread"
            return
        if k.autocast is not None:
            if k.autocast == "fp16" and not self.scaler_enabled:
                self.not_applied["autocast"] = "fp16 needs the program to step through an enabled GradScaler " \
                                               "(gradients underflow without loss scaling); none was built"
            else:
                for m in roots:
                    self._autocast(m, k.autocast)
        if k.compile:
            for m in roots:
                self._compile(m)

    def _autocast(self, m: torch.nn.Module, name: str) -> None:
        from trainprof.inject.detect import first_parameter

        p = first_parameter(m)
        dev = p.device.type if p is not None else "cpu"
        dtype = torch.bfloat16 if name == "bf16" else torch.float16
        hooks = self.agent.hooks

        def pre(module: Any, args: tuple) -> None:
            try:
                if self.forward_site is None:
                    self.forward_site = call_site()
                ctx = torch.autocast(dev, dtype=dtype)
                ctx.__enter__()
                self.autocast_open.append(ctx)
            except Exception as e:  # noqa: BLE001 - trainprof's error, not the program's
                self.agent.fail(e)

        def post(module: Any, args: tuple, out: Any) -> Any:
            if not self.autocast_open:
                return None
            self.autocast_open.pop().__exit__(None, None, None)
            # the model's output in fp32, as the program had it: `out = model(x).float()`
            from torch.utils._pytree import tree_map

            return tree_map(lambda t: t.float() if isinstance(t, torch.Tensor) and t.dtype == dtype else t, out)

        hooks.add(AUTOCAST_PRE, m.register_forward_pre_hook(pre))
        hooks.add(AUTOCAST_POST, m.register_forward_hook(post, always_call=True))
        self.agent.dtype = (name, "autocast (a tune trial's knob)")  # the peak MFU is measured against
        self.applied.append({"knob": "autocast", "object": type(m).__name__, "site": None,
                             "set": {"device_type": dev, "dtype": f"torch.{str(dtype).split('.')[-1]}"}, "overrode": {}})

    def _compile(self, m: torch.nn.Module) -> None:
        had = "forward" in vars(m)
        original = m.forward
        m.forward = torch.compile(original)  # forward only: the agent's hooks on the module stay eager

        def back() -> None:
            if had:
                m.forward = original
            else:
                vars(m).pop("forward", None)

        self.restore_fns.append(back)
        self.applied.append({"knob": "compile", "object": type(m).__name__, "site": None, "set": {"compile": True},
                             "overrode": {}})

    # ---- the end --------------------------------------------------------------------------------
    def restore(self) -> None:
        """Put back what is not a patched attribute (the agent's uninstall restores those)."""
        while self.autocast_open:
            self.autocast_open.pop().__exit__(None, None, None)
        fns, self.restore_fns = self.restore_fns, []
        for fn in reversed(fns):
            try:
                fn()
            except Exception:  # noqa: BLE001 - the program's end must not change
                pass

    def report(self) -> dict[str, Any]:
        """run.json's profile.knobs: what was asked, what each knob touched (and where), what it
        could not apply, and the warm-up steps' times (compilation shows there)."""
        k = self.k
        asked = k.set()
        not_applied = dict(self.not_applied)
        if any(n in asked for n in LOADER_KNOBS) and not self.loaders:
            not_applied.setdefault("dataloader", "the program constructed no DataLoader")
        if k.optimizer is not None and not self.optimizers:
            not_applied.setdefault("optimizer", "the program constructed no torch.optim optimizer that takes "
                                                "fused= or foreach=")
        steps = [b - a for a, b in zip(self.marks, self.marks[1:])]
        return {"asked": asked, "applied": self.applied, "not_applied": not_applied,
                "threads_asked_by_program": self.threads_asked, "forward_site": self.forward_site,
                "warmup_step_s": steps}
