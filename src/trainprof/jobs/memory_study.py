"""`trainprof memory` as a function: analytic breakdown, measured peaks, batch search, ladder.

    from trainprof.jobs.memory_study import study_memory
    result = study_memory(TrainConfig(preset="tiny").resolved(), limit_bytes=2**30)

Returns the `trainprof.memory/1` record (recordtypes/memory.Memory; docs/memory.md). Every measurement is a
probe: a few real training steps of `trainer.train` in a fresh child process.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace

import msgspec
from pathlib import Path
from typing import Any, Callable

from trainprof.analysis.run.memory import MemoryInputs, breakdown
from trainprof.jobs.memory_probe import ProbeResult, run_probe
from trainprof.jobs.memory_search import find_max_micro_batch, fit_line, ladder_rungs
from trainprof.errors import TrainprofError, UsageError
from trainprof.recordtypes.memory import SCHEMA, Memory
from trainprof.workload.config import TrainConfig

CORPUS_BYTES = 256 << 10  # a 256 KiB slice of the corpus: plenty of windows, little for RSS to notice
SHOWN = ("micro_batch", "grad_accum", "seq_len", "dtype", "attention", "optimizer", "activation_checkpointing",
         "recompute", "strategy")
# Assumed resident baseline (interpreter + torch) before the first probe has measured one.
BASELINE_GUESS = 512 << 20

OnProbe = Callable[[str, TrainConfig, "ProbeResult | None"], None]


def memory_inputs(cfg: TrainConfig, device_kind: str) -> MemoryInputs:
    m = cfg.model
    assert cfg.micro_batch and cfg.seq_len
    return MemoryInputs(
        n_layer=m.n_layer, n_head=m.n_head, d_model=m.d_model, vocab_size=m.vocab_size,
        context_len=m.context_len, mlp_ratio=m.mlp_ratio, micro_batch=cfg.micro_batch,
        seq_len=cfg.seq_len, dtype=cfg.dtype, attention=cfg.attention, optimizer=cfg.optimizer,
        checkpointing=cfg.activation_checkpointing, grad_accum=cfg.grad_accum, device_kind=device_kind,
    )


def study_memory(cfg: TrainConfig, *, limit_bytes: int | None, limit_source: str = "--memory-limit",
                 search: bool = True, ladder: bool = True, steps: int = 2,
                 on_probe: OnProbe | None = None, timeout_s: float = 600.0) -> Memory:
    """`cfg` resolved. `limit_bytes`: the (emulated) device capacity above the baseline;
    None on CUDA means the real device (genuine OOMs)."""
    from trainprof.backends import get_backend, resolve_device
    from trainprof.workload.trainer import resolve_dtype

    device = resolve_device(cfg.device)
    backend = get_backend(device)
    kind = backend.kind
    if search and kind == "cpu" and limit_bytes is None:
        raise UsageError("the micro-batch search on CPU needs a limit (an emulated device): pass "
                         "limit_bytes / --memory-limit, or search=False")
    base = replace(cfg, device=device, dtype=resolve_dtype(cfg, device), steps=steps, warmup_steps=0,
                   eval_batches=0, grad_accum=1)  # replace() re-runs __post_init__'s checks
    prober = _Prober(kind, backend.available_memory_bytes() if kind == "cpu" else None, on_probe, timeout_s)
    with tempfile.TemporaryDirectory(prefix="trainprof-memory-") as tmp:
        base = replace(base, data=str(_write_corpus(cfg.data, Path(tmp) / "corpus.txt")))
        rungs = ladder_rungs(base) if ladder else ladder_rungs(base)[:1]
        measured = [(rung, prober.measure("ladder", rung.config, None, rung.ranks) if rung.config else None)
                    for rung in rungs]
        found = (find_max_micro_batch(lambda b: prober.search_probe(replace(base, micro_batch=b), limit_bytes),
                                      limit_bytes=limit_bytes if limit_bytes is not None else backend.memory_total_bytes())
                 if search else None)
    return _record(cfg, replace(base, data=None), backend, limit_bytes, limit_source, steps, measured, found, prober)


class _Prober:
    """Runs each (config, limit) probe once, in a fresh process (jobs/memory_probe.py),
    remembering the answers and the baselines seen; `on_probe` hears before and after."""

    def __init__(self, kind: str, available: int | None, on_probe: OnProbe | None, timeout_s: float) -> None:
        self.kind, self.available, self.on_probe, self.timeout_s = kind, available, on_probe, timeout_s
        self.cache: dict[tuple, ProbeResult] = {}
        self.baseline_seen: list[int] = []

    def measure(self, stage: str, config: TrainConfig, limit: int | None, ranks: int = 1) -> ProbeResult:
        key = (config, limit) if ranks == 1 else (config, limit, ranks)
        if key in self.cache:
            return self.cache[key]
        if self.on_probe:
            self.on_probe(stage, config, None)
        r = _guard(config, self.kind, self.available, self.baseline_seen, ranks)
        if r is None and ranks > 1:
            from trainprof.jobs.memory_ranks import run_rank_probe

            r = run_rank_probe(config, ranks, limit_bytes=limit, timeout_s=self.timeout_s)
        elif r is None:
            r = run_probe(config, limit_bytes=limit, timeout_s=self.timeout_s)
        if r.status == "error":  # only an OOM is an answer; anything else is a failure
            raise TrainprofError(f"memory probe ({stage}, micro-batch {config.micro_batch}) failed: {r.reason}")
        if r.baseline_bytes is not None:
            self.baseline_seen.append(r.baseline_bytes)
        self.cache[key] = r
        if self.on_probe:
            self.on_probe(stage, config, r)
        return r

    def search_probe(self, config: TrainConfig, limit_bytes: int | None) -> ProbeResult:
        """One step of the micro-batch search: a probe already run without a limit answers for
        any limit (its peak against the limit), else a probe under the limit."""
        done = self.cache.get((config, None))
        if done is not None and done.status == "ok" and limit_bytes is not None:
            above = done.above_baseline_bytes
            if above is not None and above > limit_bytes:
                return replace(done, status="oom", reason="peak above the limit (emulated; "
                               "measured without a limit)")
            return done
        if done is not None and done.status == "oom":
            return done
        return self.measure("search", config, limit_bytes)


def _record(cfg: TrainConfig, base: TrainConfig, backend, limit_bytes: int | None, limit_source: str,  # noqa: ANN001
            steps: int, measured: list, found, prober: _Prober) -> Memory:  # noqa: ANN001
    """memory.json: the analytic breakdown of `base` beside the first rung's measurement."""
    from trainprof.workload.trainer import environment

    kind, device = backend.kind, base.device
    first = measured[0][1]
    assert first is not None
    bd = breakdown(memory_inputs(base, kind))
    m = cfg.model
    above = first.above_baseline_bytes
    cache = prober.cache
    return msgspec.convert({  # checked against its Struct: a wrong type fails here, not in a reader
        "schema": SCHEMA,
        "model": {"preset": cfg.preset, "params": bd["params"], "n_layer": m.n_layer, "n_head": m.n_head,
                  "d_model": m.d_model, "vocab_size": m.vocab_size, "context_len": m.context_len},
        "config": {**{k: getattr(base, k) for k in SHOWN}, "device": device, "probe_steps": steps},
        "device": {"kind": kind, "name": backend.device_name(), "memory_limit_bytes": limit_bytes,
                   "limit_source": limit_source if limit_bytes is not None else "device memory",
                   "memory_total_bytes": backend.memory_total_bytes(), "available_bytes": prober.available,
                   "peak_kind": first.peak_kind or None, "cpu_malloc": first.malloc or None},
        "params_bytes": bd["params_bytes"],
        "grads_bytes": bd["grads_bytes"],
        "optimizer_bytes": bd["optimizer_bytes"],
        "activations_bytes": bd["activations_bytes"],
        "logits_bytes": bd["logits_bytes"],
        "analytic_peak_bytes": bd["peak_bytes"],
        "measured_peak_bytes": first.peak_bytes,
        "measured_above_baseline_bytes": above,
        "baseline_bytes": first.baseline_bytes,
        "measured_over_analytic": above / bd["peak_bytes"] if above is not None else None,
        "max_micro_batch": found.max_micro_batch if found else None,
        "breakdown": bd,
        "search": _search_record(found, base, limit_bytes, kind) if found else None,
        "ladder": [_rung_record(rung, r, kind, limit_bytes) for rung, r in measured],
        "probes": {"count": len(cache), "wall_s": sum(r.wall_s for r in cache.values()),
                   "cpu_s": sum(r.cpu_s or 0.0 for r in cache.values())},
        "environment": environment(),
    }, Memory)


def _guard(config: TrainConfig, kind: str, available: int | None, seen: list[int], ranks: int = 1) -> ProbeResult | None:
    """CPU only: never start a configuration whose planned peak (every rank's) cannot fit in
    the memory that is actually free (a real CPU OOM ends in the kernel's OOM killer)."""
    if kind != "cpu" or available is None:
        return None
    need = ranks * (planned_peak(config, kind, ranks) + (max(seen) if seen else BASELINE_GUESS))
    if need <= available:
        return None
    return ProbeResult(config=config, status="oom",
                       reason=f"not run: the planned estimate {need / 2**20:,.0f} MiB (with the baseline) "
                              f"exceeds the {available / 2**20:,.0f} MiB available")


def planned_peak(config: TrainConfig, kind: str, ranks: int = 1, **layout: Any) -> int:
    """`plan`'s per-rank peak for one of our configurations (jobs/plan_check.py: the CPU runtime
    constant on CPU, the CUDA context on a GPU)."""
    from trainprof.jobs.plan import CUDA_CONTEXT_BYTES
    from trainprof.jobs.plan_check import CPU_RUNTIME_BYTES, estimate

    runtime = CPU_RUNTIME_BYTES if kind == "cpu" else CUDA_CONTEXT_BYTES
    return estimate(replace(config, data=None), kind, runtime, ranks, **layout)["peak_bytes"]


def _write_corpus(data: str | None, path: Path) -> Path:
    from trainprof.workload.data import load_corpus

    corpus = load_corpus(data)
    path.write_bytes(corpus.train[:CORPUS_BYTES].numpy().tobytes())
    return path


def _probe_record(r: ProbeResult, limit: int | None) -> dict[str, Any]:
    above = r.above_baseline_bytes
    return {
        "micro_batch": r.config.micro_batch,
        "status": r.status,
        "fits": r.fits,
        "measured_peak_bytes": r.peak_bytes,
        "measured_above_baseline_bytes": above,
        "reason": r.reason,
        "wall_s": r.wall_s,
        "cpu_s": r.cpu_s,
    }


def _search_record(s: Any, base: TrainConfig, limit: int | None, kind: str) -> dict[str, Any]:
    # analytic activation bytes per sequence: the slope of the forward/backward peak
    one, two = (breakdown(memory_inputs(replace(base, micro_batch=b, data=None), kind))["peak_forward_backward_bytes"]
                for b in (1, 2))
    return {"seq_len": base.seq_len, "limit_bytes": limit, "max_micro_batch": s.max_micro_batch,
            "stopped": s.stopped, "method": "doubling from 1, then bracketing (line-guided bisection)",
            "fit": fit_line(s.probes), "analytic_per_sample_bytes": two - one,
            "probes": [_probe_record(p, limit) for p in s.probes]}


def _rung_record(rung: Any, r: ProbeResult | None, kind: str, limit: int | None) -> dict[str, Any]:
    rec: dict[str, Any] = {"step": rung.name, "change": rung.change, "note": rung.note, "ranks": rung.ranks}
    if rung.config is None or r is None:
        p = rung.plan
        planned = (planned_peak(p["config"], p["device"], rung.ranks, **p["layout"]) if p else None)
        return {**rec, "config": None, "status": "not run", "measured_peak_bytes": None,
                "measured_above_baseline_bytes": None, "analytic_peak_bytes": None, "step_time_s": None,
                "planned_peak_bytes": planned, "planned_device": p["device"] if p else None}
    cfg = replace(rung.config, data=None)
    above = r.above_baseline_bytes
    # analysis/run/memory.py's breakdown knows one rank of AdamW with full or no checkpointing
    analytic = (breakdown(memory_inputs(cfg, kind))["peak_bytes"]
                if rung.ranks == 1 and cfg.optimizer != "adafactor" and cfg.recompute == "full" else None)
    return {
        **rec,
        "config": {k: getattr(cfg, k) for k in SHOWN},
        "status": r.status,
        "reason": r.reason,
        "measured_peak_bytes": r.peak_bytes,
        "measured_above_baseline_bytes": above,
        "ranks_above_baseline_bytes": list(r.ranks_above_baseline_bytes) if rung.ranks > 1 else None,
        "analytic_peak_bytes": analytic,
        "planned_peak_bytes": planned_peak(cfg, kind, rung.ranks),
        "planned_device": kind,
        "fits_limit": (above <= limit) if (limit is not None and above is not None) else None,
        "step_time_s": r.step_time_s,
        "wall_s": r.wall_s,
        "cpu_s": r.cpu_s,
    }
