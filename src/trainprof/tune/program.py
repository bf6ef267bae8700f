"""`trainprof tune -- COMMAND`: the ladder's configurations and knobs for the user's own program.

A trial is the program run unchanged under the profile agent, with a `ProgramConfig`: the
knobs the agent turns inside it (inject/options.Knobs: DataLoader settings, fused/foreach
optimizers, autocast, torch.compile, threads, GC, TF32, cudnn.benchmark), the program's own
flags rewritten (`--arg-knob "--batch-size=32,64"`) and environment variables set
(`--env-knob "NAME=a,b"`, and PYTORCH_CUDA_ALLOC_CONF). A knob is a function of the current
configuration, as the reference workload's are (tune/catalogue.py), built from what the
baseline's profile found (`Facts`): a knob that does not apply returns the reason, shown in
the ladder ("no DataLoader in the program").

What each knob changes in the program, and the patch that makes it permanent, is in
tune/patches.py; the accuracy rule is tune/guard.ProgramGuard's.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from trainprof.errors import UsageError
from trainprof.knobs import Knobs
from trainprof.tune.catalogue import Knob

ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
ALLOC_VALUE = "expandable_segments:True"  # fewer fragmentation retries and cudaMalloc calls (PyTorch CUDA semantics)
PREFETCH = 4  # batches each worker keeps ready (torch's default 2): bursts of slow samples absorbed


@dataclass(frozen=True)
class ProgramConfig:
    """One trial's changes to the program; the baseline changes nothing."""

    knobs: Knobs = field(default_factory=Knobs)
    """what the agent turns inside the program"""
    args: tuple[tuple[str, str], ...] = ()
    """the program's own flags set to these values (--arg-knob), in the order set"""
    env: tuple[tuple[str, str], ...] = ()
    """environment variables set for the program (--env-knob, PYTORCH_CUDA_ALLOC_CONF)"""
    repeat: int = 0
    """a re-run of the same configuration (the baseline's second run: the guard's noise)"""

    def with_arg(self, flag: str, value: str) -> "ProgramConfig":
        return replace(self, args=(*((f, v) for f, v in self.args if f != flag), (flag, value)))

    def with_env(self, name: str, value: str) -> "ProgramConfig":
        return replace(self, env=(*((n, v) for n, v in self.env if n != name), (name, value)))

    def with_knobs(self, **kv: Any) -> "ProgramConfig":
        return replace(self, knobs=replace(self.knobs, **kv))


def shown(cfg: ProgramConfig) -> dict[str, Any]:
    """tune.json's and the journal's "config" of a trial: only what it changes ({} for the baseline)."""
    out: dict[str, Any] = dict(cfg.knobs.set())
    if cfg.args:
        out["args"] = dict(cfg.args)
    if cfg.env:
        out["env"] = dict(cfg.env)
    if cfg.repeat:
        out["repeat"] = cfg.repeat
    return out


def from_shown(d: dict[str, Any]) -> ProgramConfig:
    """The inverse of `shown`."""
    d = dict(d)
    args, env, repeat = d.pop("args", {}), d.pop("env", {}), d.pop("repeat", 0)
    return ProgramConfig(Knobs(**d), tuple(args.items()), tuple(env.items()), repeat)


def again(cfg: ProgramConfig) -> ProgramConfig:
    """The configuration run once more (the ladder's second baseline: a program's seed is its own)."""
    return replace(cfg, repeat=cfg.repeat + 1)


# ---- the command line ----------------------------------------------------------------------
def parse_arg_knob(text: str) -> tuple[str, tuple[str, ...]]:
    """`--batch-size=32,64,128` → ("--batch-size", ("32", "64", "128"))."""
    flag, sep, values = text.partition("=")
    vals = tuple(v.strip() for v in values.split(",") if v.strip())
    if not sep or not flag.startswith("-") or not vals or any(c.isspace() for c in flag):
        raise UsageError(f"--arg-knob {text!r}: give the program's flag and the values to try, e.g. "
                         "--arg-knob \"--batch-size=32,64,128\"")
    return flag, vals


def parse_env_knob(text: str) -> tuple[str, tuple[str, ...]]:
    """`OMP_NUM_THREADS=1,2` → ("OMP_NUM_THREADS", ("1", "2"))."""
    name, sep, values = text.partition("=")
    vals = tuple(v.strip() for v in values.split(",") if v.strip())
    if not sep or not name.isidentifier() or not vals:
        raise UsageError(f"--env-knob {text!r}: give a variable's name and the values to try, e.g. "
                         "--env-knob \"OMP_NUM_THREADS=1,2\"")
    return name, vals


def current_arg(argv: list[str], flag: str) -> str | None:
    """The value the command gives `flag` (`--flag V` or `--flag=V`; the last one wins), or None."""
    found = None
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            found = argv[i + 1]
        elif a.startswith(flag + "="):
            found = a[len(flag) + 1:]
    return found


def rewrite(argv: list[str], args: tuple[tuple[str, str], ...]) -> list[str]:
    """The command with each (flag, value) set: replaced where the command gives the flag, else
    appended (the script's own arguments come last, also under torchrun)."""
    out = list(argv)
    for flag, value in args:
        hit = False
        for i, a in enumerate(out):
            if a == flag and i + 1 < len(out):
                out[i + 1], hit = value, True
            elif a.startswith(flag + "="):
                out[i], hit = f"{flag}={value}", True
        if not hit:
            out += [flag, value]
    return out


def command_line(argv: list[str], cfg: ProgramConfig) -> str:
    """The shell line that runs the program with `cfg`'s flags and variables (not its agent
    knobs: those are code changes, listed as patches)."""
    from trainprof.controls import shell_join

    env = " ".join(f"{n}={shlex.quote(v)}" for n, v in cfg.env)
    return (env + " " if env else "") + shell_join(rewrite(argv, cfg.args))


# ---- what the baseline found ---------------------------------------------------------------
@dataclass(frozen=True)
class Facts:
    """The baseline's profile, as far as the knobs need it (its run.json)."""

    device: str = "cpu"
    """the device kind the model trains on: cpu, cuda, ..."""
    loaders: int = 0
    """DataLoaders the program iterated"""
    loader: dict[str, Any] | None = None
    """the training DataLoader's settings (inject/detect.loader_settings)"""
    optimizer: str | None = None
    """"AdamW (for-loop, torch's default off CUDA)" (inject/part.optimizer_impl)"""
    dtype: str | None = None
    """the compute dtype the profile found (autocast's, else the parameters')"""
    threads: int | None = None
    """torch's intra-op threads in the program"""
    roots: tuple[str, ...] = ()
    """the root modules' classes (the model)"""
    unit: str | None = None
    """tokens or samples: what a step's batch counts"""
    data_s: float | None = None
    """the median measured step's wait for data"""
    step_s: float | None = None
    """the median measured step"""
    peak_tflops: float | None = None
    peak_dtype: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, run: Any) -> "Facts":
        import statistics

        c, p = run.config, run.profile
        steps = run.steps
        return cls(device=str(c.get("device") or "cpu").split(":")[0], loaders=int(c.get("data_loaders_iterated") or 0),
                   loader=c.get("data_loader"), optimizer=c.get("optimizer"), dtype=c.get("dtype"),
                   threads=(run.environment or {}).get("cpu_threads"), roots=tuple((p.root_modules if p else None) or ()),
                   unit=p.value("batch_unit") if p else None,
                   data_s=statistics.median(s.data_s for s in steps) if steps else None,
                   step_s=run.summary.step_time_median_s, peak_tflops=run.device.peak_tflops,
                   peak_dtype=run.device.peak_dtype, env={ALLOC_CONF: os.environ.get(ALLOC_CONF, "")})

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "roots": list(self.roots)}

    @property
    def optimizer_class(self) -> str | None:
        return self.optimizer.split(" ")[0] if self.optimizer else None


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# ---- the knobs -------------------------------------------------------------------------------
Apply = Callable[[ProgramConfig, Any], "ProgramConfig | str | None"]


def _cuda_only(what: str) -> Callable[[Facts], str | None]:
    def check(f: Facts) -> str | None:
        return None if f.device == "cuda" else f"CUDA only ({what}); this program trains on {f.device}"
    return check


def workers_for(f: Facts) -> int:
    """Worker processes to try: one per core up to 4 (a worker that waits on I/O costs no core,
    one that decodes costs one)."""
    return max(2, min(4, cores()))


def _workers(f: Facts) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        if not f.loaders:
            return "no DataLoader in the program (the baseline iterated none)"
        have = int((f.loader or {}).get("num_workers") or 0)
        n = workers_for(f)
        if have >= n:
            return f"the program's DataLoader already has {have} workers"
        return cfg.with_knobs(num_workers=n, persistent_workers=True)
    return apply


def _prefetch(f: Facts) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        if not f.loaders:
            return "no DataLoader in the program (the baseline iterated none)"
        if not (cfg.knobs.num_workers or (f.loader or {}).get("num_workers")):
            return "the DataLoader has no workers (prefetching is theirs)"
        if ((f.loader or {}).get("prefetch_factor") or 2) >= PREFETCH:
            return f"the program's DataLoader already prefetches {f.loader['prefetch_factor']} batches per worker"
        return cfg.with_knobs(prefetch_factor=PREFETCH)
    return apply


def _pin(f: Facts) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        if not f.loaders:
            return "no DataLoader in the program (the baseline iterated none)"
        if f.device != "cuda":
            return f"pinned memory speeds host-to-GPU copies; this program trains on {f.device}"
        if (f.loader or {}).get("pin_memory"):
            return "the program's DataLoader already pins memory"
        return cfg.with_knobs(pin_memory=True)
    return apply


def _model(f: Facts) -> str | None:
    return None if f.roots else "no model found (no module with trainable parameters ran in a training forward)"


def _compile(f: Facts) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        return _model(f) or cfg.with_knobs(compile=True)
    return apply


def _autocast(name: str, f: Facts) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        if _model(f):
            return _model(f)  # type: ignore[return-value]
        if f.dtype in ("bf16", "fp16"):
            return f"the program already computes in {f.dtype}"
        if name == "fp16" and f.device != "cuda":
            return f"fp16 autocast is for GPUs (and needs a GradScaler); this program trains on {f.device}: bf16 is tried"
        return cfg.with_knobs(autocast=name)
    return apply


def _optimizer(f: Facts) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        import inspect

        import torch.optim

        name = f.optimizer_class
        if name is None:
            return "no optimizer step seen"
        cls = getattr(torch.optim, name, None)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
            return f"{name} is not a torch.optim optimizer: no fused/foreach switch to turn"
        params = inspect.signature(cls.__init__).parameters
        if "(fused)" in (f.optimizer or ""):
            return f"the program's {name} is already fused"
        if "fused" in params:
            return cfg.with_knobs(optimizer="fused")
        if "foreach" not in params:
            return f"{name} takes neither fused= nor foreach="
        if "(foreach" in (f.optimizer or "") and "default" not in (f.optimizer or ""):
            return f"the program's {name} is already foreach"
        return cfg.with_knobs(optimizer="foreach")
    return apply


def _flag(name: str, f: Facts, what: str) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        return _cuda_only(what)(f) or cfg.with_knobs(**{name: True})
    return apply


def _alloc(f: Facts) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        if _cuda_only("the CUDA caching allocator")(f):
            return _cuda_only("the CUDA caching allocator")(f)  # type: ignore[return-value]
        if f.env.get(ALLOC_CONF):
            return f"the program's environment already sets {ALLOC_CONF}={f.env[ALLOC_CONF]}"
        return cfg.with_env(ALLOC_CONF, ALLOC_VALUE)
    return apply


def _gc(f: Facts) -> Apply:
    return lambda cfg, dev: cfg.with_knobs(gc_freeze=True)


def _threads(f: Facts) -> Apply:
    def apply(cfg: ProgramConfig, dev: Any) -> ProgramConfig | str:
        n = cores()
        if f.threads == n:
            return f"the program already uses {n} intra-op threads, one per core it may run on"
        return cfg.with_knobs(threads=n)
    return apply


# name, what it does, builder, same maths (the loss must match the baseline's within the noise), cost
CATALOGUE: tuple[tuple[str, str, Callable[[Facts], Apply], bool, str], ...] = (
    ("dataloader_workers", "DataLoader worker processes (persistent across epochs)", _workers, True,
     "host memory and a core per busy worker"),
    ("prefetch_factor", f"{PREFETCH} batches prefetched per DataLoader worker", _prefetch, True, "host memory"),
    ("pin_memory", "DataLoader(pin_memory=True): page-locked batches, faster copies to the GPU", _pin, True,
     "pinned host memory"),
    ("compile", "torch.compile the model", _compile, True, "compile time on the first steps (reported apart)"),
    ("bf16", "bf16 autocast around the model's forward", lambda f: _autocast("bf16", f), True,
     "8-bit mantissa in matmuls: small loss differences"),
    ("fp16", "fp16 autocast around the model's forward (with the program's GradScaler)",
     lambda f: _autocast("fp16", f), True, "overflow risk, handled by the program's loss scaling"),
    ("tf32", "TF32 matmuls and convolutions", lambda f: _flag("tf32", f, "TF32 is an Ampere+ GPU format"), True,
     "10-bit mantissa in matmul inputs"),
    ("fused_optimizer", "the optimizer's fused (else foreach) implementation", _optimizer, True, "none known"),
    ("cudnn_benchmark", "cudnn.benchmark: the fastest convolution algorithm per shape",
     lambda f: _flag("cudnn_benchmark", f, "cuDNN's autotuner"), True, "a search on each new input shape"),
    ("cuda_alloc_conf", f"{ALLOC_CONF}={ALLOC_VALUE}", _alloc, True, "none known"),
    ("gc_freeze", "gc.freeze() after the first step and a larger generation-0 threshold", _gc, True,
     "memory held by reference cycles lives longer"),
    ("threads", "one intra-op thread per core the program may run on", _threads, True,
     "none on a dedicated machine; slower when other work shares the cores"),
)
NAMES = tuple(c[0] for c in CATALOGUE)


def user_knobs(argv: list[str], arg_knobs: tuple[str, ...], env_knobs: tuple[str, ...]) -> tuple[Knob, ...]:
    """One rung per value of each --arg-knob / --env-knob, in the order given; a value the
    command already has is skipped. They may change what is learned (another batch, another
    learning rate): `same_math=False` (tune/guard.ProgramGuard)."""
    out: list[Knob] = []
    flags, envs = [parse_arg_knob(t) for t in arg_knobs], [parse_env_knob(t) for t in env_knobs]
    sets = [(f, vs, current_arg(argv, f), "args", "the command already runs with {} {}",
             "the program's own flag {} set to {}", "your flag: it may change what is learned") for f, vs in flags]
    sets += [(n, vs, os.environ.get(n), "env", "the environment already has {}={}", "environment variable {}={}",
              "your variable: it may change what is learned") for n, vs in envs]
    for name, values, now, where, already, what, cost in sets:
        for v in values:
            def apply(cfg: ProgramConfig, dev: Any, name: str = name, v: str = v, now: str | None = now,
                      where: str = where, already: str = already) -> Any:
                if dict(getattr(cfg, where)).get(name, now) == v:
                    return already.format(name, v)
                return cfg.with_arg(name, v) if where == "args" else cfg.with_env(name, v)
            out.append(Knob(f"{name}={v}", what.format(name, v), apply, same_math=False, cost=cost))
    return tuple(out)


def program_knobs(facts: Facts, names: tuple[str, ...] | None) -> tuple[Knob, ...]:
    """The agent's knobs, in the catalogue's order (`names`: a subset; () none)."""
    chosen = NAMES if names is None else names
    return tuple(Knob(n, d, build(facts), same_math=m, cost=c) for n, d, build, m, c in CATALOGUE if n in chosen)
