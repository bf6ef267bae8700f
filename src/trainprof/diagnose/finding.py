"""Severity from a finding's gain, and the thresholds every rule reads (named, documented,
overridable). The Finding record itself is recordtypes/finding.py's Struct, imported here."""

from __future__ import annotations

from dataclasses import dataclass

from msgspec.structs import replace

from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.finding import Finding  # the one finding type, rule to report (re-exported)

BOTTLENECKS = ("compute", "memory", "communication", "data", "host overhead")
# engine.principal can also name "memcpy" and "idle (unexplained)": timeline parts no rule claims


INFO_GAIN_PCT = 0.5  # Thresholds.info_gain_pct's default (documented there)


def severity(gain_pct: float, info_below_pct: float = INFO_GAIN_PCT) -> str:
    """high ≥ 20%, medium ≥ 5%, low ≥ `info_below_pct`, else info: a finding about (nearly)
    nothing — a caveat with no speed-up claimed, or a cause this trace shows costing < 0.5%."""
    if gain_pct < info_below_pct:
        return "info"
    return "high" if gain_pct >= 20 else "medium" if gain_pct >= 5 else "low"


def gain_for_severity(finding: Finding) -> float:
    """The gain a finding's severity is judged on: the what-if's projection where one exists
    (the dependency graph re-timed without the cause), else the rule's upper bound."""
    p = or_default(finding.projected_gain_pct, None)
    return float(p) if p is not None else float(or_default(finding.estimated_gain_pct, 0.0) or 0.0)


def cap_severity(findings: list[Finding], th: "Thresholds") -> list[Finding]:
    """A finding is `info` exactly when its gain (gain_for_severity) is below `th.info_gain_pct`;
    otherwise it keeps the band of its bound, at least `low` (a bound under the threshold that
    the what-if projects above it: the projection decides, the band stays modest). Info
    findings go last, the others keep their order."""
    def one(f: Finding) -> Finding:
        if gain_for_severity(f) < th.info_gain_pct:
            return replace(f, severity="info")
        return replace(f, severity="low") if f.severity == "info" else f

    out = [one(f) for f in findings]
    return [f for f in out if f.severity != "info"] + [f for f in out if f.severity == "info"]


@dataclass(frozen=True)
class Thresholds:
    """When a rule fires. Shares are % of the GPU timeline (trace) or of step time (run)."""

    info_gain_pct: float = INFO_GAIN_PCT
    """every rule: a finding whose gain (projected where the what-if has one, else its bound) is below
    this is `info`, never high/medium/low: 0.5% is inside the run-to-run noise of a quiet GPU (CV
    ~1%) and below what a user can measure a fix by; the finding stays, as a note"""

    data_loading_pct: float = 5.0
    """data_loading: GPU idle waiting for batches, or DataLoader share of the step"""
    host_sync_pct: float = 2.0
    """host_sync: GPU idle caused by blocking host calls"""
    host_syncs_per_step: float = 1.0
    """host_sync: blocking runtime calls (stream/device/event sync, sync memcpy) per step"""
    pageable_memcpy_pct: float = 1.0
    """pageable_memcpy: copy time from/to pageable host memory"""
    matmul_share_pct: float = 20.0
    """low_tensor_core: GEMM/conv/attention share of kernel time before Tensor Cores matter"""
    tensor_core_pct: float = 50.0
    """low_tensor_core: fires when Tensor Core share of that time is below this"""
    tensor_core_ratio: float = 4.0
    """low_tensor_core: a device "has" Tensor Cores when its 16-bit peak ≥ this × fp32 peak"""
    launch_idle_pct: float = 10.0
    """launch_bound: GPU idle while the host was launching"""
    short_kernel_pct: float = 50.0
    """launch_bound: share of kernels shorter than the launch-stats threshold (10 µs)"""
    launch_dominant_pct: float = 50.0
    """launch_bound: ... or, whatever the kernel sizes, when launching is this share of all GPU idle"""
    allocator_idle_pct: float = 2.0
    """allocator_churn: GPU idle while the host was in allocator calls (cudaMalloc/cudaFree, hip*)"""
    small_batch_memory_frac: float = 0.5
    """small_batch: peak memory below this fraction of capacity leaves room to grow the batch"""
    small_batch_overhead_pct: float = 10.0
    """small_batch: per-step host work outside the model (h2d, other) a bigger batch amortises"""
    unaligned_share_pct: float = 5.0
    """unaligned_shapes: device-time share of GEMMs with an unaligned dimension"""
    optimizer_pct: float = 10.0
    """optimizer_bound: optimizer step share"""
    exposed_comm_pct: float = 5.0
    """exposed_communication: communication not overlapped with compute"""
    memory_pressure_frac: float = 0.9
    """memory_pressure: peak memory above this fraction of capacity"""
    math_attention_calls: int = 1
    """math_attention: SDPA calls that fell back to the math kernel"""
    outlier_ratio: float = 1.5
    """run split: a phase whose mean ≥ this × its median is a candidate outlier-driven phase"""
    outlier_min_share_pct: float = 2.0
    """run split: ... and only if mean − median ≥ this % of the mean step (tiny phases never flip)"""
    contention_cv: float = 0.10
    """contended_machine: step-time coefficient of variation above this (a quiet machine: ~0.01-0.05)"""
    contention_others_cpu_pct: float = 10.0
    """contended_machine: mean share of all cores' time used by other processes"""
    contention_steal_pct: float = 5.0
    """contended_machine: mean CPU time stolen by the hypervisor"""
    contention_load_per_core: float = 1.0
    """contended_machine: mean 1-minute load average per core (our threads count too)"""
    tiny_kernels_per_step: float = 3.0
    """tiny_kernels: casts/copies/fills shorter than 20 µs per step (the issue's record: three ~15 µs
    casts per step); the gain, from the what-if, decides whether it is more than a note"""
    redundant_copies: int = 1
    """redundant_copies: copies feeding the next op beside their own source (each is pure waste)"""
    eager_attention_pct: float = 5.0
    """math_attention: share of the GPU timeline (host time on CPU traces) in hand-written attention"""
