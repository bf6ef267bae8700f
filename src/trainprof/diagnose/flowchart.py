"""Seed 002's bottleneck flowchart, followed on one record (docs/rules.md, "The flowchart").

    utilisation < 70%? ── yes ─▶ what is the device waiting for? ─▶ data ─▶ workers' CPU ≥ 50%?
        │                                                 │            yes: preprocessing-bound
        no                                                │            no:  I/O-bound
        ▼                                                 └─▶ communication | host overhead
    throughput < 50% of the achievable? ── yes ─▶ compute efficiency (busy > 90%: "busy but slow")
        └── no ─▶ near the ceiling: further tuning unlikely to pay

Each test reads one number from the record (the trace's GPU busy share, else NVML's
utilisation over the measured steps, else the run's compute share of the step; MFU against
the measured matmul ceiling; the DataLoader workers' CPU from the sampler) and the path taken
is returned test by test, with the number, so a report can show which test passed and why.
A number the record lacks is "unknown" and the path stops there: never a guess. Pure.
"""

from __future__ import annotations

from msgspec.structs import replace

from trainprof.analysis.run.step_split import PIPELINE, phases, seconds
from trainprof.diagnose.registry import RuleInput, rule
from trainprof.recordtypes.analysis import Rank
from trainprof.recordtypes.base import as_struct, known, or_default
from trainprof.recordtypes.finding import Finding
from trainprof.recordtypes.flowchart import ChartTest, Flowchart
from trainprof.recordtypes.run import RunRecord
from trainprof.vocab.idle import ALLOCATOR, DATA_LOADING, HOST_LAUNCH, HOST_SYNC, OTHER, UNATTRIBUTED

# Seed 002 (§ bottleneck analysis): "GPU utilisation below 70% → look at communication or data"
UTIL_LOW_PCT = 70.0
# The "busy but slow": the GPU is busy > 90% of the time yet far from its ceiling
BUSY_PCT = 90.0
# "well below the achievable": under half of what a dense matmul reaches on this device and
# dtype. Seed 000: well-optimised training reaches ~50% MFU, and bench matmul reaches 70-90%
# of the datasheet peak on current GPUs, so an efficient model sits at ≥ ~55% of achievable.
ACHIEVABLE_LOW_PCT = 50.0
# A DataLoader worker at ≥ half of one core while the step waits for data is busy decoding or
# augmenting (preprocessing); one mostly idle while the step waits is blocked on reads (I/O).
WORKER_CPU_HIGH_PCT = 50.0


IDLE_CAUSES = {"data": (f"{DATA_LOADING}_us",),
               "host overhead": (f"{HOST_SYNC}_us", f"{HOST_LAUNCH}_us", f"{ALLOCATOR}_us"),
               "idle (unexplained)": (f"{OTHER}_us", f"{UNATTRIBUTED}_us")}


def idle_causes(rank: Rank) -> dict[str, float]:
    """Level two: the idle table's causes as % of the idle time (analysis/timeline/idle.py): data =
    DataLoader waits; host overhead = syncs, slow launches and allocator calls; idle (unexplained) = gaps whose
    next work was already queued (a cross-stream event, a collective's peers) or whose launch
    the trace lacks."""
    ib = rank.idle_breakdown
    idle = float(or_default(ib.idle_us, 0.0) or 0.0)
    return {c: (100.0 * sum(float(or_default(getattr(ib, f), 0.0) or 0.0) for f in fields) / idle if idle > 0 else 0.0)
            for c, fields in IDLE_CAUSES.items()}


def _test(question: str, value: float | None, threshold: float, answer: str, source: str) -> ChartTest:
    """One test of the chart as the record answered it (recordtypes/flowchart.py)."""
    return ChartTest(question=question, value=value, threshold=threshold, answer=answer,
                     passed={"yes": True, "no": False}.get(answer), source=source)


def utilisation(rank: Rank | None, run: RunRecord | None) -> tuple[float | None, str]:
    """The device's busy share (%) and where it was read, best source first: the trace's GPU
    timeline (100 − idle − stream waits), NVML utilisation over the measured steps (scope),
    the run's compute share of the step (forward + backward, median; a CPU run)."""
    if rank is not None and or_default(rank.has_gpu, False):
        tb = rank.temporal_breakdown
        idle = float(or_default(tb.idle_pct, 0.0) or 0.0) + float(or_default(tb.sync_pct, 0.0) or 0.0)
        return max(0.0, 100.0 - idle), "GPU busy share of the trace's timeline"
    if run is None:
        return None, "no record"
    gpus = run.system_summary.gpus if run.system_summary is not None else None
    if gpus and gpus[0].util_pct_mean is not None:
        g = gpus[0]
        return float(g.util_pct_mean), f"NVML utilisation, mean over the {g.scope or 'whole run'}"
    split = run.summary.phase_split if known(run.summary.phase_split) else None
    if split and "forward_s" in split:
        share = sum(float(split[p].get("median_share_pct") or 0.0) for p in ("forward_s", "backward_s"))
        return share, "compute share of the step (forward + backward, median; no GPU timeline)"
    t = float(run.summary.step_time_s or 0.0)
    if t > 0:
        return 100.0 * float(run.summary.forward_s + run.summary.backward_s) / t, "compute share of the step (mean)"
    return None, "no utilisation in the record"


def pct_of_achievable(run: RunRecord | None, ceiling_tflops: float | None = None) -> tuple[float | None, str]:
    """Model TFLOP/s as a % of the achievable: the measured matmul ceiling when given
    (`bench matmul`'s cache), else the device's peak when that peak is itself a measured matmul
    (a CPU), else MFU against the datasheet peak — a lower bound of the % of achievable, said so."""
    if run is None or not run.summary.tflops:
        return None, "no model TFLOP/s in the record"
    if ceiling_tflops is None and known(run.achievable):
        ceiling_tflops = run.achievable.tflops
    if ceiling_tflops:
        return 100.0 * float(run.summary.tflops) / ceiling_tflops, "% of the measured matmul ceiling (bench matmul)"
    if run.summary.mfu is None:
        return None, "no peak for this device: no MFU"
    if run.device.peak_source == "measured":
        return 100.0 * float(run.summary.mfu), "% of this machine's measured matmul peak"
    return 100.0 * float(run.summary.mfu), "MFU vs the datasheet peak (a lower bound; `bench matmul` measures the ceiling)"


def workers_cpu(run: RunRecord | None) -> tuple[float | None, str]:
    """The DataLoader workers' mean CPU use (% of one core per worker) from the sampler."""
    summary = run.system_summary if run is not None else None
    w = summary.workers_cpu_pct if summary is not None else None
    if w is not None:
        return float(w.mean), f"sampled, per DataLoader worker (mean of {w.workers_max} at most)"
    if run is not None and (run.config or {}).get("workers") == 0:
        return None, "no DataLoader workers: data is loaded in the training process (unknown)"
    return None, "workers' CPU use not sampled (unknown)"


def waited_for(rank: Rank | None, run: RunRecord | None) -> tuple[str, float | None, str]:
    """What an underused device waits for: data, communication or host overhead, the largest."""
    if rank is not None and or_default(rank.has_gpu, False):
        causes = idle_causes(rank)
        idle = float(or_default(rank.temporal_breakdown.idle_pct, 0.0) or 0.0)
        parts = {"data": causes["data"] * idle / 100.0, "host overhead": causes["host overhead"] * idle / 100.0,
                 "communication": float(or_default(rank.temporal_breakdown.communication_pct, 0.0) or 0.0)}
        src = "% of the timeline: idle waiting for data / host, exposed communication"
    elif run is not None:
        split = run.summary.phase_split if known(run.summary.phase_split) else {}

        def share(p: str) -> float:
            if split and p in split:
                return float(split[p].get("median_share_pct") or 0.0)
            t = float(run.summary.step_time_s or 0.0)
            return 100.0 * seconds(run.summary, p) / t if t > 0 else 0.0
        parts = {"data": share("data_s") + share("h2d_s"), "host overhead": share("optimizer_s") + share("other_s"),
                 "communication": share(PIPELINE)}
        src = "% of the step: data + host-to-device copy, optimizer + other" + (
            ", a pipeline stage's waits" if PIPELINE in phases(run.summary) else "")
    else:
        return "unknown", None, "no record"
    top = max(parts, key=lambda k: (parts[k], k == "data"))
    return top, parts[top], src


def flowchart(rank: dict | Rank | None, run: dict | RunRecord | None,
              ceiling_tflops: float | None = None) -> Flowchart:
    """The principal branch and the path to it: the tests in the order the chart asks them,
    each with the number that decided it (run.json's and analysis.json's `flowchart`)."""
    rank, run = as_struct(rank, Rank), as_struct(run, RunRecord)
    path: list[ChartTest] = []
    util, src = utilisation(rank, run)
    if util is None:
        path.append(_test("device utilisation < 70%?", None, UTIL_LOW_PCT, "unknown", src))
        return _out("unknown", path)
    low = util < UTIL_LOW_PCT
    path.append(_test("device utilisation < 70%?", round(util, 1), UTIL_LOW_PCT, "yes" if low else "no", src))
    if low:
        what, value, wsrc = waited_for(rank, run)
        path.append(_test("what does the device wait for?", None if value is None else round(value, 1), 0.0, what, wsrc))
        if what != "data":
            return _out(what, path)
        cpu, csrc = workers_cpu(run)
        if cpu is None:
            path.append(_test("workers' CPU ≥ 50% of a core?", None, WORKER_CPU_HIGH_PCT, "unknown", csrc))
            return _out("data loading", path)
        hot = cpu >= WORKER_CPU_HIGH_PCT
        path.append(_test("workers' CPU ≥ 50% of a core?", round(cpu, 1), WORKER_CPU_HIGH_PCT, "yes" if hot else "no",
                         csrc))
        return _out("data loading: preprocessing-bound" if hot else "data loading: I/O-bound", path)
    ach, asrc = pct_of_achievable(run, ceiling_tflops)
    if ach is None:
        path.append(_test("throughput < 50% of the achievable?", None, ACHIEVABLE_LOW_PCT, "unknown", asrc))
        return _out("unknown", path)
    slow = ach < ACHIEVABLE_LOW_PCT
    path.append(_test("throughput < 50% of the achievable?", round(ach, 1), ACHIEVABLE_LOW_PCT, "yes" if slow else "no",
                     asrc))
    if not slow:
        return _out("near the ceiling", path)
    return _out("compute efficiency: busy but slow" if util > BUSY_PCT else "compute efficiency", path)


def _out(branch: str, path: list[ChartTest]) -> Flowchart:
    return Flowchart(branch=branch, path=path)


def path_text(chart: Flowchart) -> str:
    """The path as one line: `utilisation 95.0% < 70%? no → ... → busy but slow`."""
    steps = []
    for t in chart.path:
        v = "unknown" if t.value is None else f"{t.value:.1f}%"
        steps.append(f"{t.question} {v}: {t.answer}")
    return " → ".join(steps + [chart.branch])


# The findings that already claim part of a compute-efficiency gap: busy_but_slow claims only
# what is left, so the list never counts the same time twice (docs/rules.md, disjoint claims).
EFFICIENCY_CLAIMS = ("low_tensor_core", "unaligned_shapes", "math_attention", "tiny_kernels", "launch_bound")


@rule("busy_but_slow", scope="after")
def busy_but_slow(x: RuleInput) -> Finding | None:
    """The device is busy (> 90%) yet its model FLOP/s are under half the achievable: the time
    goes to slow work, not to waiting. gain = (100 − % of achievable) minus what the efficiency
    findings in `x.found` (the rank rules') already claim: an upper bound (the step at the
    ceiling), not a projection."""
    from trainprof.diagnose.finding import severity

    rank, run, found = x.rank, x.run, x.found
    util, usrc = utilisation(rank, run)
    ach, asrc = pct_of_achievable(run)
    if util is None or ach is None or util <= BUSY_PCT or ach >= ACHIEVABLE_LOW_PCT:
        return None
    claimed = sum(f.estimated_gain_pct for f in found if f.id in EFFICIENCY_CLAIMS)
    gain = max(0.0, min(100.0, 100.0 - ach - claimed))
    signs = []
    if rank is not None and known(rank.launch_stats) and rank.launch_stats:
        short = or_default(rank.launch_stats.short_kernel_count_pct, None)
        if short is not None:
            signs.append(f"{short:.0f}% of kernels are short (small kernels)")
    if rank is not None and or_default(rank.tensor_core_pct, None) is not None:
        signs.append(f"Tensor Cores run {float(rank.tensor_core_pct):.0f}% of matmul time")
    if run is not None and run.device.peak_dtype in ("fp32", "tf32"):
        signs.append(f"the model computes in {run.device.peak_dtype} (precision)")
    signs += [f"{f.id} claims {f.estimated_gain_pct:.1f}%" for f in found if f.id in EFFICIENCY_CLAIMS]
    evidence = (f"busy {util:.1f}% ({usrc}) but at {ach:.1f}% {asrc}; "
                + ("; ".join(signs) if signs else "no sub-cause in the record (profile with a trace for kernel detail)"))
    return Finding(id="busy_but_slow", severity=severity(gain),
                   title="Busy but slow: the device works all the time, far below its ceiling",
                   evidence=evidence, estimated_gain_pct=round(gain, 2),
                   fix="compute efficiency, in the seed's order: bf16 autocast (+ TF32) where the model runs fp32; "
                       "bigger kernels (a bigger micro-batch, torch.compile to fuse small ones); shapes padded to "
                       "multiples of 64 (vocabulary, hidden and FFN sizes); fused attention (SDPA)",
                   confidence="low" if "datasheet" in asrc else "medium", bottleneck="compute")


def data_kind(finding: Finding, run: RunRecord | None) -> Finding:
    """The data_loading finding told apart by the workers' CPU (the chart's last test): ≥ 50% of
    a core each → preprocessing-bound (cheaper batches, more workers), below → I/O-bound (faster
    storage, caching, bigger reads, more prefetch). Unknown keeps the finding as it is. The same
    finding, its title and fix refined: one cause, one claim of its time (docs/rules.md)."""
    cpu, src = workers_cpu(run)
    if cpu is None:  # the record cannot tell: the finding stays as the rule wrote it
        return finding
    if cpu >= WORKER_CPU_HIGH_PCT:
        return replace(finding, title="The input pipeline starves the step: preprocessing-bound (workers busy)",
                       evidence=finding.evidence + f"; the DataLoader workers use {cpu:.0f}% of a core each ({src})",
                       fix="the workers are computing: make each batch cheaper (profile __getitem__/collate_fn, "
                           "move decoding and augmentation offline or to the GPU, e.g. DALI), or add workers "
                           "if free cores remain; " + finding.fix)
    return replace(finding, title="The input pipeline starves the step: I/O-bound (workers waiting)",
                   evidence=finding.evidence + f"; the DataLoader workers use only {cpu:.0f}% of a core each ({src})",
                   fix="the workers wait on reads, not compute: faster or local storage (copy the data set to "
                       "local NVMe / RAM), larger sequential reads (sharded formats: WebDataset, TFRecord, "
                       "packed arrays), more prefetch (prefetch_factor) and more workers to overlap the waits; "
                       + finding.fix)
