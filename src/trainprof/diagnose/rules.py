"""The rule catalogue: one small pure function per finding id (docs/rules.md), each registered
by the `@rule` above it (diagnose/registry.py) with the what-if scenario that removes its cause.

Each rule takes one input record, a RuleInput (diagnose/registry.py): the per-rank analysis
record (`rank`, from `trainprof analyze`, typed as recordtypes.analysis.Rank: diagnose/engine.py
converts the analyser's dict once), the run record (`run`, run.json's recordtypes.run.RunRecord
from `trainprof run`/Monitor), either may be None, and the thresholds; it returns a Finding
(recordtypes/finding.py) or None. Gains are
upper bounds: the share of step time the cause occupies, scaled by what the fix can at most
remove. A finding whose fix is one what-if edit (its rule's `scenario`: data loading, host
syncs, exposed communication, launch overhead, the allocator, tiny kernels, redundant copies)
takes its bound from that scenario — the time the edit
removes per step, capped by the step minus the busiest stream's work — so its projected
gain, in the same unit, never exceeds it; the GPU-idle figure the rule fired on stays in
the evidence.
"""

from __future__ import annotations

from typing import Any

from trainprof.analysis.graph.projection import bound_pct
from trainprof.analysis.run.step_split import MIN_STEPS_FOR_MEDIAN, PhaseShare, contention, measured, phase_shares
from trainprof.diagnose import optimizer_advice
from trainprof.diagnose.device_advice import device_of, is_amd, matrix_units, precision_fix, sdpa_fix
from trainprof.diagnose.finding import Finding, Thresholds, severity
from trainprof.diagnose.registry import RuleInput, rule, scenario_of
from trainprof.recordtypes.analysis import Attention, Rank
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.run import RunRecord
from trainprof.vocab import matmul as mm
from trainprof.vocab.matmul import MATMUL_OPS



def _n(v: Any, default: Any = 0.0) -> Any:
    """A number the record may lack (UNSET) or hold as null, as `default` then."""
    return or_default(v, default)


def _span(rank: Rank | None) -> float:
    """GPU timeline over every step (µs): the denominator of figures measured over all work
    (communication, copies, optimizer kernels, matmuls)."""
    if not rank:
        return 0.0
    ib = rank.idle_breakdown
    return float(_n(ib.work_span_us, None) or _n(ib.span_us))


def _idle_span(rank: Rank | None) -> float:
    """The idle breakdown's own span (the temporal breakdown's window, analysis/timeline/idle.py): the
    denominator of its causes."""
    return float(_n(rank.idle_breakdown.span_us)) if rank else 0.0


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def _bound(finding_id: str, rank: Rank | None, share: float) -> float:
    """The what-if bound of a finding when the rank has the scenario its rule declares
    (@rule(..., scenario=...)), else the rule's share."""
    b = bound_pct(scenario_of(finding_id), _n(rank.whatif, None)) if rank else None
    return share if b is None else b


def _steps(rank: Rank | None) -> int:
    return max(1, _n(rank.steps, 0)) if rank else 1


def _make(id_: str, gain: float, title: str, evidence: str, fix: str, confidence: str, bottleneck: str) -> Finding:
    gain = max(0.0, min(100.0, gain))
    return Finding(id=id_, severity=severity(gain), title=title, evidence=evidence, estimated_gain_pct=round(gain, 2),
                   fix=fix, confidence=confidence, bottleneck=bottleneck)


def run_phases(run: RunRecord, th: Thresholds) -> list[PhaseShare]:
    """The measured split of a run (analysis/run/step_split.py); [] without per-step records."""
    steps = measured(run.steps, run.summary.warmup_steps)
    if len(steps) < MIN_STEPS_FOR_MEDIAN:
        return []
    return phase_shares(steps, th.outlier_ratio, th.outlier_min_share_pct)


def _run_phase(run: RunRecord | None, field: str, th: Thresholds) -> tuple[float, str]:
    """(share of the step in %, how it was measured in words): the median's share when a few
    outlier steps drive the mean (docs/rules.md, noise)."""
    if not run:
        return 0.0, ""
    p = next((x for x in run_phases(run, th) if x.phase == field), None)
    if p is not None and p.outlier_driven:
        return p.share_pct, (f" at the median step (the mean, {p.mean_share_pct:.1f}%, is driven by a few "
                             f"slow steps: mean {p.mean_s * 1e3:,.1f} ms vs median {p.median_s * 1e3:,.1f} ms)")
    s = run.summary
    return _pct(getattr(s, field), s.step_time_s), ""


@rule("data_loading", scenario="remove data_loading", path_kind="data_loading")
def data_loading(x: RuleInput) -> Finding | None:
    rank, run, th = x.rank, x.run, x.th
    span = _idle_span(rank)
    if rank and rank.has_gpu and span > 0:
        ib = rank.idle_breakdown
        share = _pct(ib.data_loading_us, span)
        if share < th.data_loading_pct:
            return None
        evidence = (f"the GPU sat idle {ib.data_loading_us / 1e3:,.1f} ms ({share:.1f}% of the GPU timeline) "
                    f"while a DataLoader range was running; DataLoader ranges total {ib.dataloader_us / 1e3:,.1f} ms")
        conf = "high"
        share = _bound("data_loading", rank, share)
    else:
        share, how = _run_phase(run, "data_s", th)
        if run is None and rank and _n(rank.steps, 0):
            cpu = _host_span(rank)
            share = _pct(rank.idle_breakdown.dataloader_us, cpu)
        if share < th.data_loading_pct:
            return None
        evidence = f"waiting for the next batch takes {share:.1f}% of each step{how}"
        conf = "high" if run else "medium"
    return _make("data_loading", share, "The input pipeline starves the training step", evidence,
                 _data_fix(run), conf, "data")


def _data_fix(run) -> str:
    """The fix for a starved step, from what the program's DataLoader already does (`trainprof
    profile` records it: config.data_loader): never advise workers to a loader that has them."""
    dl = ((run.config or {}).get("data_loader") if run is not None else None) or {}
    n = dl.get("num_workers") or 0
    if n > 0:
        more = [] if dl.get("pin_memory") else ["pin_memory=True"]
        more += [] if dl.get("persistent_workers") else ["persistent_workers=True"]
        return (f"the program's DataLoader already runs {n} worker{'s' if n > 1 else ''}"
                f"{' with pinned memory' if dl.get('pin_memory') else ''}: make each batch cheaper (time "
                "__getitem__ and collate_fn; move decoding/augmentation offline or to the GPU), or raise "
                f"num_workers above {n} if the workers' cores are saturated"
                + (f"; also {', '.join(more)}" if more else "") + "; copy with .to(device, non_blocking=True)")
    return ("DataLoader(num_workers=4, pin_memory=True, persistent_workers=True, prefetch_factor=4); "
            "copy with .to(device, non_blocking=True); move decoding/augmentation offline or to the GPU. "
            "Reference workload: --num-workers 4 --pin-memory --non-blocking")


@rule("host_sync", scenario="remove host_sync", path_kind="sync_wait")
def host_sync(x: RuleInput) -> Finding | None:
    rank, th = x.rank, x.th
    if not rank or not rank.has_gpu:
        return None  # on CPU a sync costs nothing: there is no queue to drain
    ib = rank.idle_breakdown
    share = _pct(ib.host_sync_us, _idle_span(rank))
    n = _steps(rank)
    per_step = sum(c.count for c in ib.sync_calls) / n
    # Fires on measured idle, or on blocking calls inside every step even where this trace
    # shows little idle from them (the queue they drain may be short here, not elsewhere).
    if share < th.host_sync_pct and per_step < th.host_syncs_per_step:
        return None
    stepped = bool(_n(rank.steps, 0))  # a trace without steps gets no per-step figure
    ops = ", ".join(f"{o.count} {o.name}" + (f" ({o.count / n:.0f}/step)" if stepped else "") for o in ib.sync_ops[:3])
    calls = ", ".join(f"{c.count} {c.name}" for c in ib.sync_calls[:2])
    site = ib.call_sites[0] if ib.call_sites else None
    where = ""
    if site:
        loc = " ← ".join(x for x in (site.op, site.python) if x)
        at = f" in {loc}" if loc else " (call site not recorded)"
        where = f"; biggest: {site.call}{at} ({site.gaps} gaps, {site.idle_us / 1e3:,.1f} ms)"
    evidence = (f"blocking host calls left the GPU idle {ib.host_sync_us / 1e3:,.1f} ms ({share:.1f}% of the "
                f"GPU timeline); {ops or 'no .item()-like ops'}; {calls}{where}")
    return _make("host_sync", _bound("host_sync", rank, share),
                 "Host synchronisation inside the step drains the GPU queue", evidence,
                 "remove .item()/.cpu()/.numpy()/print(tensor) from the step; keep running sums on the GPU "
                 "(loss_sum += loss.detach()) and read them every N steps; avoid torch.nonzero / boolean "
                 "indexing with data-dependent shapes; CUDA_LAUNCH_BLOCKING must be unset",
                 "high" if share >= th.host_sync_pct else "medium", "host overhead")


@rule("pageable_memcpy")
def pageable_memcpy(x: RuleInput) -> Finding | None:
    rank, th = x.rank, x.th
    if not rank or not rank.has_gpu or not rank.memcpy:
        return None
    m = rank.memcpy
    share = _pct(m.pageable_us, _span(rank))
    if share < th.pageable_memcpy_pct:
        return None
    return _make("pageable_memcpy", share, "Copies from pageable host memory cannot overlap compute",
                 f"{m.pageable_count} pageable copies took {m.pageable_us / 1e3:,.1f} ms ({share:.1f}% of the "
                 f"GPU timeline): {', '.join(k for k in m.by_kind if 'Pageable' in k)}",
                 "DataLoader(pin_memory=True) and x.to('cuda', non_blocking=True); for custom buffers "
                 "tensor.pin_memory() once. Reference workload: --pin-memory --non-blocking", "high", "data")


@rule("low_tensor_core")
def low_tensor_core(x: RuleInput) -> Finding | None:
    """The device's peaks by dtype (TFLOP/s) are the rank's roofline's: no peaks, no finding."""
    rank, th = x.rank, x.th
    peaks = rank.roofline.peaks_by_dtype if rank and rank.has_gpu else None
    if not rank or not rank.has_gpu or not peaks:
        return None
    dev = device_of(rank)
    tc_peak = max(peaks.get("bf16") or 0, peaks.get("fp16") or 0)
    fp32 = peaks.get("fp32")
    if not fp32 or tc_peak < th.tensor_core_ratio * fp32:
        return None  # no Tensor Cores worth the name (or unknown device)
    kernel_us = sum(_n(c.total_us) for c in _n(rank.kernel_classes, []))
    mm, tc = _n(rank.matmul_us), _n(rank.matmul_tensor_core_us)
    mm_share = _pct(mm, kernel_us)
    tc_share = _pct(tc, mm)
    if mm_share < th.matmul_share_pct or tc_share >= th.tensor_core_pct:
        return None
    slow = mm - tc
    gain = _pct(slow, _span(rank)) * (1 - fp32 / tc_peak)
    units = matrix_units(dev)
    # the fix is the device's: bf16 only where it has a bf16 path, fp16 + GradScaler on
    # V100/T4/RTX 20-series, ROCm's names on AMD (diagnose/device_advice.py)
    return _make("low_tensor_core", gain,
                 f"Matrix math runs on {'the vector ALUs' if is_amd(dev) else 'CUDA cores'}, not {units}",
                 f"GEMM/conv/attention kernels are {mm_share:.0f}% of kernel time but only {tc_share:.0f}% of it "
                 f"ran on {units} ({slow / 1e3:,.1f} ms did not); peak {tc_peak:g} vs {fp32:g} TFLOP/s",
                 precision_fix(dev), "medium", "compute")


@rule("launch_bound", scenario="remove launch_overhead", path_kind="launch_overhead")
def launch_bound(x: RuleInput) -> Finding | None:
    """The GPU waits for the host to launch: fires on GPU idle behind launches above
    `launch_idle_pct` when most kernels are short (a stream of tiny kernels cannot be fed
    faster), or when launching is what most of the GPU's idle time waits for
    (`launch_dominant_pct` of it): then the host is the bottleneck whatever the kernel sizes."""
    rank, th = x.rank, x.th
    if not rank or not rank.has_gpu or not rank.launch_stats:
        return None
    ib, ls = rank.idle_breakdown, rank.launch_stats
    share = _pct(ib.host_launch_us, _idle_span(rank))
    of_idle = _pct(ib.host_launch_us, _n(ib.idle_us))
    short = _n(ls.short_kernel_count_pct) >= th.short_kernel_pct
    if share < th.launch_idle_pct or not (short or of_idle >= th.launch_dominant_pct):
        return None
    delay = _n(ls.launch_to_start.p50_us, None) if ls.launch_to_start else None
    evidence = (f"GPU idle {ib.host_launch_us / 1e3:,.1f} ms ({share:.1f}% of the GPU timeline, {of_idle:.0f}% of its "
                f"idle time) while the host was launching; "
                # a trace without steps gets no per-step figure (its kernel count is the whole trace's)
                + (f"{_n(ls.kernels_per_step):,.0f} kernels/step, " if _n(rank.steps, 0) else f"{_n(ls.kernels, 0):,} kernels, ")
                + f"{_n(ls.short_kernel_count_pct):.0f}% shorter than {_n(ls.short_kernel_threshold_us):g} µs"
                + (f"; median launch-to-start {delay:.1f} µs" if delay is not None else ""))
    fix = ("torch.compile(model) to fuse small kernels; CUDA graphs (torch.compile(mode='reduce-overhead')) "
           "for static shapes; a larger micro-batch so each kernel does more. Reference workload: --compile")
    if not short:  # the host's own work between launches, not kernel count, is the cost
        fix = ("the host spends the step in Python and operator dispatch between launches: CUDA graphs "
               "(torch.compile(mode='reduce-overhead'), or torch.cuda.graphs) replay the step without it; "
               "torch.compile(model) to cut the op count; a larger micro-batch so each launch does more; "
               "move CPU-side work (metrics, logging) off the step. Reference workload: --compile")
    return _make("launch_bound", _bound("launch_bound", rank, share), "The host cannot launch kernels fast enough",
                 evidence, fix, "medium", "host overhead")


@rule("allocator_churn", scenario="remove allocator", path_kind="allocator")
def allocator_churn(x: RuleInput) -> Finding | None:
    """The GPU waits while the host allocates or frees device memory (analysis/timeline/idle.py's
    `allocator` cause): a cold caching allocator, `torch.cuda.empty_cache()` in the loop, or
    shapes that change every step; a free also synchronises the device."""
    rank, th = x.rank, x.th
    if not rank or not rank.has_gpu:
        return None
    ib = rank.idle_breakdown
    share = _pct(_n(ib.allocator_us), _idle_span(rank))
    if share < th.allocator_idle_pct:
        return None
    calls = _n(ib.allocator_calls, [])
    named = ", ".join(f"{c.count} {c.name} ({c.total_us / 1e3:,.1f} ms)" for c in calls[:3])
    rocm = any(c.name.startswith("hip") for c in calls)
    env = "PYTORCH_HIP_ALLOC_CONF" if rocm else "PYTORCH_CUDA_ALLOC_CONF"
    evidence = (f"the GPU sat idle {ib.allocator_us / 1e3:,.1f} ms ({_pct(ib.allocator_us, _n(ib.idle_us)):.0f}% of "
                f"its idle time, {share:.1f}% of the GPU timeline) while the host was in allocator calls"
                + (f": {named}" if named else ""))
    return _make("allocator_churn", _bound("allocator_churn", rank, share),
                 "Device memory is allocated and freed inside the step", evidence,
                 "keep the caching allocator warm: no torch.cuda.empty_cache() (or gc-driven frees) inside the "
                 f"loop, and run a warm-up step before profiling; {env}=expandable_segments:True so the cache "
                 "grows without new segments; keep shapes stable (pad or bucket variable-length batches, "
                 "drop_last=True) so cached blocks are reused", "high" if share >= 2 * th.allocator_idle_pct else
                 "medium", "host overhead")


@rule("small_batch")
def small_batch(x: RuleInput) -> Finding | None:
    """Per-step host work that does not grow with the batch (h2d launches, Python, logging:
    the step's `other` and `h2d` time), with memory to spare. Data and optimizer time are
    left to their own rules, so no time is claimed twice."""
    run, th = x.run, x.th
    if not run:
        return None
    s = run.summary
    total = run.device.memory_total_bytes
    peak = s.peak_memory_bytes
    if not total or not peak:
        return None
    frac = peak / total
    if frac >= th.small_batch_memory_frac:
        return None
    fixed = _pct(s.other_s + s.h2d_s, s.step_time_s)
    if fixed < th.small_batch_overhead_pct:
        return None
    mb = run.config.get("micro_batch") or 1
    k = 4 if frac < 0.2 else 2  # a realistic next step; memory grows ~linearly with the batch
    gain = fixed * (1 - 1 / k)
    return _make("small_batch", gain, "The batch is small: per-step fixed costs dominate and memory is unused",
                 f"peak memory {peak / 2**30:.2f} of {total / 2**30:.1f} GiB ({100 * frac:.0f}%); host work outside "
                 f"the model (copies, Python, logging) is {fixed:.0f}% of each step and does not grow with the "
                 f"batch; MFU {100 * (s.mfu or 0):.1f}%",
                 f"raise the micro-batch to about {mb * k} (×{k}), or keep the global batch with --grad-accum; "
                 f"re-tune the learning rate. Reference workload: --micro-batch {mb * k}", "low", "compute")


# the ops whose output width N may be a vocabulary (an LM head): plain 2-D products
LM_HEAD_OPS = frozenset({mm.LINEAR, mm.ADDMM, mm.MM, mm.MATMUL})


def _gemm_mnk(name: str, dims: list) -> dict[str, int] | None:
    """M, K, N of a GEMM-like op from its input shapes (A [.., M, K] × B [.., K, N]; linear's
    weight is [N, K] and its M is every leading dim of the input folded)."""
    shapes = [d for d in dims or [] if isinstance(d, list) and len(d) >= 2 and all(isinstance(x, int) for x in d)]
    op = MATMUL_OPS.get(name)
    if op is not None and op.adds:  # the added input comes first (vocab/matmul.py)
        shapes = shapes[1:] if len(shapes) >= 3 else shapes
    if len(shapes) < 2:
        return None
    a, b = shapes[0], shapes[1]
    if (op is not None and op.b_transposed) or (len(b) == 2 and a[-1] == b[1] and a[-1] != b[0]):
        m = 1
        for x in a[:-1]:
            m *= x
        return {"M": m, "K": a[-1], "N": b[0]}
    return {"M": a[-2], "K": a[-1], "N": b[-1]}


def _pad(v: int, mult: int) -> int:
    """Padding to suggest: the next multiple of 64 when it costs ≤ 5% more, else of `mult`."""
    up64 = -(-v // 64) * 64
    return up64 if (up64 - v) <= 0.05 * v else -(-v // mult) * mult


def _unaligned(p: dict) -> list[tuple[str, int, int]]:
    """(role, value, padded) for each GEMM dimension ≥ 64 that is not a multiple of the
    dtype's Tensor Core granule: 8 elements for 16-bit, 16 for fp8, 4 for fp32/tf32."""
    mult = {"bf16": 8, "fp16": 8, "fp8": 16, "int8": 16}.get(p.dtype, 4)
    mnk = _gemm_mnk(p.name, p.input_dims)
    if mnk is None:
        return []
    return [(role, v, _pad(v, mult)) for role, v in mnk.items() if v >= 64 and v % mult]


ROLE_WORDS = {"M": "rows (tokens × batch)", "K": "reduction dim (hidden size)", "N": "output features"}
BATCHED_ROLE_WORDS = {"M": "rows of each matrix", "K": "reduction dim", "N": "columns of each matrix"}


@rule("unaligned_shapes")
def unaligned_shapes(x: RuleInput) -> Finding | None:
    rank, th = x.rank, x.th
    if not rank:
        return None
    points = rank.roofline_points
    pts = [p for p in points if p.name in MATMUL_OPS or p.kind == "gemm"]
    bad = [(p, _unaligned(p)) for p in pts]
    bad = [(p, d) for p, d in bad if d]
    total = sum(p.device_time_us for p in points)
    t_bad = sum(p.device_time_us for p, _ in bad)
    share = _pct(t_bad, total)
    if not bad or share < th.unaligned_share_pct:
        return None
    p0, d0 = max(bad, key=lambda x: x[0].device_time_us)
    shapes = " × ".join(str(d) for d in (p0.input_dims or []) if isinstance(d, list) and d)
    pads = ", ".join(dict.fromkeys(f"{v} → {padded}" for _, v, padded in d0))
    # what the dimension is decides who can pad it
    vocab = any(role == "N" and v >= 10_000 for role, v, _ in d0) and p0.name in LM_HEAD_OPS
    batched = (p0.name in MATMUL_OPS and MATMUL_OPS[p0.name].batched) or (p0.name == mm.MATMUL and len(
        next((d for d in p0.input_dims or [] if isinstance(d, list)), [])) >= 3 and not vocab)
    words = BATCHED_ROLE_WORDS if batched else ROLE_WORDS
    named = ", ".join(f"{role} = {v} ({words[role]})" for role, v, _ in d0)
    if vocab:
        where = ("this is the LM head: pad the vocabulary (50257 → 50304 for GPT-2; reference workload "
                 "--pad-vocab) and ignore the extra logits")
    elif batched:
        where = ("in a batched matmul such a dimension is usually the sequence/token count (attention "
                 "scores T×T): pad the input length (e.g. 577 image tokens → 640) or use fused attention")
    else:
        where = "choose hidden/FFN sizes divisible by 64 (trainprof bench gemm-shapes finds fast ones)"
    # Gain: unaligned GEMMs lose the vectorised/Tensor Core tile paths; padding typically
    # recovers ~25% of their time (nanoGPT's vocab 50257→50304: ~25% faster head matmul).
    gain = 0.25 * _pct(t_bad, _span(rank) if rank.has_gpu else total)
    return _make("unaligned_shapes", gain, "GEMM dimensions are not multiples of 8/64",
                 f"{len(bad)} GEMM shape groups ({share:.0f}% of the top ops' time) have unaligned dimensions; "
                 f"biggest: {p0.name} {shapes} ({p0.dtype}): {named}",
                 f"pad {pads} in {p0.name} {shapes}; {where}", "medium", "compute")


@rule("optimizer_bound")
def optimizer_bound(x: RuleInput) -> Finding | None:
    """The optimizer step is a large share of the step. What it advises is decided by the
    phase's split on the GPU (host_work.phase_split; diagnose/optimizer_advice.py): a phase
    mostly communication (a sharded/distributed optimizer's collectives) gets overlap and
    bucketing advice for the optimizer in use, one mostly compute or idle (a per-tensor loop)
    a fused or multi-tensor form of *that* optimizer's class, read from the trace's
    `Optimizer.step#<Class>.step` ranges — never AdamW's for another class."""
    rank, run, th = x.rank, x.run, x.th
    opt = rank.optimizer if rank else None
    split = None
    if run:
        share, how = _run_phase(run, "optimizer_s", th)
        impl = run.config.get("optimizer")
        classes: list[str] = []
        evidence = f"optimizer.step() takes {share:.1f}% of each step{how} (implementation: {impl})"
    elif opt and opt.steps and rank.has_gpu:
        share = _pct(_n(opt.gpu_us), _span(rank))
        classes = list(_n(opt.classes, []))
        impl = ",".join(classes)
        split = optimizer_advice.phase_parts(opt)
        evidence = (f"the optimizer step's kernels take {share:.1f}% of the GPU timeline, "
                    f"{_n(opt.kernels_per_step):.0f} kernels per step ({impl or 'class not recorded'})")
        if split:
            evidence += "; " + optimizer_advice.split_text(split, _n(opt.phase_us))
    else:
        return None
    if share < th.optimizer_pct:
        return None
    if split and optimizer_advice.bound_by(split) == "communication":
        # overlap can hide at most the phase's communication that no compute hides now
        gain = _pct(split["communication"], _span(rank))
        return _make("optimizer_bound", gain, "The optimizer step waits on communication", evidence,
                     optimizer_advice.comm_fix(classes), "medium", "communication")
    if impl and "fused" in impl.lower():
        return None
    # A fused optimizer does the update in a handful of kernels instead of several per tensor:
    # measured 2-5x faster step (PyTorch docs); we bound the gain at 2/3 of the step.
    return _make("optimizer_bound", share * 2 / 3, "The optimizer step is a large share of the step", evidence,
                 optimizer_advice.compute_fix(classes, impl), "high" if run else "medium", "host overhead")


@rule("exposed_communication", scenario="remove exposed_comm", path_kind="communication")
def exposed_communication(x: RuleInput) -> Finding | None:
    rank, th = x.rank, x.th
    if not rank or not rank.has_gpu:
        return None
    c = rank.communication
    if not c or not c.kernels:
        return None
    # one definition (analysis/timeline/communication.py): exposed_us is the breakdown's
    # communication part, over its window; a record written before that measured every step
    new = _n(c.steps_union_us, None) is not None
    share = _pct(c.exposed_us, _idle_span(rank) if new else _span(rank))
    if share < th.exposed_comm_pct:
        return None
    colls = ", ".join(f"{x.collective} ×{x.count}" for x in c.collectives[:3])
    return _make("exposed_communication", _bound("exposed_communication", rank, share),
                 "Communication is not hidden under compute",
                 f"{c.exposed_us / 1e3:,.1f} ms of collectives ({share:.1f}% of the GPU timeline) ran with no "
                 f"compute beside them; overlap {c.overlap_pct or 0:.0f}%; {colls}",
                 "DDP(bucket_cap_mb=...) tuned so the first bucket's all-reduce starts early; "
                 "with gradient accumulation wrap all but the last micro-batch in model.no_sync(); FSDP: "
                 "forward/backward prefetch; check the topology (NVLink vs PCIe, NCCL_DEBUG=INFO)",
                 "medium", "communication")


@rule("memory_pressure")
def memory_pressure(x: RuleInput) -> Finding | None:
    run, th = x.run, x.th
    if not run:
        return None
    total = run.device.memory_total_bytes
    peak = run.summary.peak_memory_bytes
    if not total or not peak or peak / total < th.memory_pressure_frac:
        return None
    return _make("memory_pressure", 0.0, "Peak memory is close to capacity",
                 f"peak {peak / 2**30:.2f} of {total / 2**30:.1f} GiB ({100 * peak / total:.0f}%): allocator retries "
                 "and fragmentation slow steps, and any growth will fail",
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; activation checkpointing; a smaller micro-batch "
                 "with gradient accumulation. Reference workload: --activation-checkpointing or --grad-accum 2",
                 "medium", "memory")


@rule("math_attention")
def math_attention(x: RuleInput) -> Finding | None:
    """Attention that materialises the T×T scores: SDPA's math fallback, or attention written
    by hand (matmul → softmax → matmul, analysis/timeline/attention_pattern.py) on any trace."""
    rank, th = x.rank, x.th
    if not rank:
        return None
    a = rank.attention or Attention()
    whole = _span(rank) if rank.has_gpu else _host_span(rank)
    eager = _n(a.eager_blocks, 0)
    eager_share = _pct(_n(a.eager_time_us), whole)
    if eager and eager_share >= th.eager_attention_pct:
        ex = a.eager_example or {}
        shapes = (f"; e.g. {ex.get('first')} {ex.get('first_dims')} → softmax → {ex.get('second')} "
                  f"{ex.get('second_dims')}") if ex else ""
        how = "by op order and shapes" if a.eager_by_shape else "by op order (shapes not recorded)"
        share = eager_share + _pct(a.math_gpu_us, whole)
        # a fused kernel never writes the T×T scores to memory: typically 2-4x faster attention
        # (FlashAttention paper), so at most half of the block's time is the bound used here
        return _make("math_attention", share * 0.5, "Attention is computed eagerly (matmul → softmax → matmul)",
                     f"{eager} hand-written attention blocks found {how}, {eager_share:.1f}% of the "
                     f"{'GPU timeline' if rank.has_gpu else 'host time'}{shapes}",
                     "replace the block with torch.nn.functional.scaled_dot_product_attention(q, k, v, "
                     "attn_mask=mask, dropout_p=p, is_causal=causal): one fused FlashAttention/memory-efficient "
                     "kernel (Hugging Face models: attn_implementation=\"sdpa\")", "medium", "compute")
    if a.math_calls < th.math_attention_calls:
        return None
    share = _pct(a.math_gpu_us, _span(rank)) if rank.has_gpu else 0.0
    return _make("math_attention", share * 0.5, "Scaled-dot-product attention fell back to the math kernel",
                 f"{a.math_calls} SDPA calls ran the math path (T×T scores materialised), "
                 f"{a.fused_calls} a fused kernel; math path kernels {a.math_gpu_us / 1e3:,.1f} ms",
                 sdpa_fix(device_of(rank)), "medium", "compute")


def _host_span(rank: Rank) -> float:
    """CPU-only trace: the profiled steps' host time (µs)."""
    return float(sum(_n(s.cpu_us) for s in _n(rank.per_step, [])))


@rule("contended_machine")
def contended_machine(x: RuleInput) -> Finding | None:
    """Not a fix but a caveat on every other number: the machine was shared while it ran."""
    run, th = x.run, x.th
    if not run:
        return None
    signs = contention(run, th.contention_cv, th.contention_others_cpu_pct, th.contention_steal_pct,
                       th.contention_load_per_core)
    if not signs:
        return None
    direct = any(("other processes" in x or "hypervisor" in x) for x in signs)
    return _make("contended_machine", 0.0, "The machine was contended: step times are noisy",
                 "; ".join(signs),
                 "measure on an idle machine (or pin the run to free cores: --threads, --bind-numa) and compare "
                 "medians of several runs; `trainprof tune` already alternates trials with the baseline for this",
                 "high" if direct else "medium" if len(signs) > 1 else "low", "host overhead")


@rule("tiny_kernels", scenario="remove tiny_kernels", path_kind="kernel")
def tiny_kernels(x: RuleInput) -> Finding | None:
    """Many casts/copies/fills shorter than 20 µs per step (analysis/timeline/tiny_kernels.py):
    each costs a launch for work the step need not do; the gain is the what-if's (`remove
    tiny_kernels`: the kernels and their ops' host time cost 0)."""
    rank, th = x.rank, x.th
    if not rank or not rank.has_gpu:
        return None
    tk = _n(rank.tiny_kernels, None)
    if not tk or tk.per_step < th.tiny_kernels_per_step:
        return None
    share = _pct(tk.total_us, _span(rank))
    stepped = bool(_n(rank.steps, 0))
    sites = "; ".join(
        (f"{g.per_step:,.1f}/step " if stepped else f"{g.count:,} ") + f"{g.kind} from {g.op or 'an unlinked launch'}" + (f" ({g.python})" if g.python else "")
        + f", {g.total_us / 1e3:,.2f} ms" for g in tk.groups[:3])
    evidence = (f"{tk.count:,} kernels shorter than {tk.threshold_us:g} µs are casts, copies or fills"
                + (f" ({tk.per_step:,.1f} per step)" if stepped else "")
                + f", {tk.total_us / 1e3:,.2f} ms on the GPU ({share:.2f}% of the GPU timeline) and a launch each: {sites}")
    kinds = {g.kind for g in tk.groups}
    fix = []
    if "cast/copy" in kinds:
        fix.append("do the cast once: cast and move inputs in one .to(device, dtype, non_blocking=True) (or in the "
                   "DataLoader's collate_fn), keep parameters and buffers in the compute dtype, cast constants once "
                   "at setup")
    if "fill" in kinds:
        fix.append("pre-allocate: make zero/one/full tensors once outside the step and reuse them "
                   "(optimizer.zero_grad(set_to_none=True) instead of zeroing gradients)")
    if any("ddp.reducer" in (g.op or "") for g in tk.groups):
        fix.append("DDP(..., gradient_as_bucket_view=True): the gradients become views into DDP's buckets, so its "
                   "copy_bucket_to_grad copies disappear")
    fix.append("fuse what remains: torch.compile fuses casts and fills into the kernels that use them")
    return _make("tiny_kernels", _bound("tiny_kernels", rank, share), "Tiny cast/copy/fill kernels cost a launch each",
                 evidence, "; ".join(fix), "medium", "host overhead")


@rule("redundant_copies", scenario="remove redundant_copies", path_kind="kernel")
def redundant_copies(x: RuleInput) -> Finding | None:
    """A copy whose output feeds the next op together with its own source, found by shape
    (analysis/timeline/redundant_copies.py): the op could read the source twice."""
    rank, th = x.rank, x.th
    rc = _n(rank.redundant_copies, None) if rank else None
    if not rc or rc.count < th.redundant_copies:
        return None
    whole = _span(rank) if rank.has_gpu else _host_span(rank)
    share = _pct(rc.time_us, whole)
    p = rc.pairs[0] if rc.pairs else None
    example = (f"; e.g. {p.copy} of {list(p.dims)} → {p.consumer} with two {list(p.dims)} inputs"
               + (f" ({p.python})" if p.python else "") + f" ×{p.count}") if p else ""
    stepped = bool(_n(rank.steps, 0))
    evidence = (f"{rc.count} copies" + (f" ({rc.per_step:,.1f} per step)" if stepped else "")
                + f" feed the next op together with their own source (matched by shape and order: the trace "
                f"records no tensor identities), {rc.time_us / 1e3:,.2f} ms of "
                f"{'GPU' if rc.time_kind == 'gpu' else 'host'} time ({share:.2f}% of the "
                f"{'GPU timeline' if rank.has_gpu else 'host time'}){example}")
    return _make("redundant_copies", _bound("redundant_copies", rank, share), "A copy feeds an op beside its own source",
                 evidence, "pass the source itself (torch.mm(x, x) reads x twice without a copy); keep a clone only "
                 "where an op writes in place into one of its inputs, and .contiguous() only before an op that needs "
                 "it", "medium", "memory")
