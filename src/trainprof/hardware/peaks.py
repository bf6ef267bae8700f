"""Which peaks a measurement is judged against: the user's override, the spec-table row, a
measurement of this machine, or none. One resolver for `trainprof run` (MFU/HFU, the
device record) and `trainprof analyze` (the roofline's roofs).

Order: `--gpu-spec` picks a row by key (an unknown key is a usage error); else the row
that matches the device name (exactly one, hardware/specs.py), or for a trace the row its
architecture alone implies (hardware/identity.py: only where one product has it); else, for
a CPU, the caller's measurement of this machine; else nothing, and MFU is reported unknown
with the reason, never a guessed peak (Lightning's Throughput does the same for unknown
devices). A trace identified as a GPU trace is never measured against this machine's CPU,
whatever its name field says (an empty name once cost 11-23 s of CPU matmul benchmarks and
a 0.0026 TFLOP/s "peak").
`--peak-tflops` then replaces every dtype's peak; `--peak-bandwidth-gbs` the bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

from trainprof.errors import UsageError
from trainprof.hardware.identity import DeviceIdentity, peak_hint
from trainprof.hardware.overrides import PeakOverrides  # noqa: F401 - its home before; callers import it here
from trainprof.hardware.specs import DTYPES, DeviceSpec, load_specs, unknown_key_message, unmatched_device_message


Origin = Literal["user", "datasheet", "measured", "unknown"]


@dataclass(frozen=True)
class Peaks:
    """Resolved peaks: dense TFLOP/s per dtype column and the memory bandwidth, with their origin."""

    tflops: dict[str, float]
    bandwidth_gbs: float | None
    origin: Origin  # of the TFLOP/s
    spec: DeviceSpec | None = None  # the spec-table row used, if any
    user_bandwidth: bool = False
    hint: str | None = None  # no row matched the device name: why, and the nearest keys
    measured: tuple[str, ...] = field(default=())  # dtypes measured on this machine
    assumed: str | None = None  # the row was implied by the architecture alone: which and why


def resolve_peaks(
    device_name: str | None,
    overrides: PeakOverrides,
    *,
    measure_tflops: Callable[[str], float] | None = None,
    measure_dtypes: tuple[str, ...] = ("fp32", "bf16"),
    measure_bandwidth: Callable[[], float] | None = None,
    identity: DeviceIdentity | None = None,
) -> Peaks:
    """`device_name` None means a CPU (or a trace without a GPU): its peaks are measured with
    `measure_tflops(dtype)` for `measure_dtypes` and `measure_bandwidth()` when given, and
    only what no override replaces is measured (each costs a short benchmark). `identity`
    (a trace's device, hardware/identity.py) replaces `device_name` when given: its GPU
    verdict decides, so a GPU trace with no name is never measured here."""
    table = load_specs()
    gpu = identity.gpu if identity is not None else device_name is not None
    assumed = None
    if overrides.gpu_spec:
        spec = table.get(overrides.gpu_spec)
        if spec is None:
            raise UsageError(unknown_key_message(overrides.gpu_spec))
    elif identity is not None:
        spec = identity.spec
        if spec is not None and identity.assumed:
            info = identity.info
            assumed = f"{spec.key} assumed from {identity.arch} ({info.why if info else identity.basis})"
    else:
        spec = table.match(device_name) if device_name else None
    user_tflops, user_bw = overrides.peak_tflops, overrides.peak_bandwidth_gbs
    tflops: dict[str, float] = {}
    bw: float | None = None
    origin: Origin = "unknown"
    hint = None
    measured: tuple[str, ...] = ()
    if spec is not None:
        tflops, bw, origin = dict(spec.tflops), spec.bandwidth_gbs, "datasheet"
    elif identity is not None and gpu:
        hint = peak_hint(identity)
    elif gpu:
        hint = unmatched_device_message(device_name)
    elif measure_tflops is not None:
        measured = measure_dtypes
        tflops = {d: user_tflops if user_tflops is not None else measure_tflops(d) for d in measure_dtypes}
        bw = measure_bandwidth() if measure_bandwidth is not None and user_bw is None else None
        origin = "measured"
    if user_tflops is not None:
        tflops = {d: user_tflops for d in (tflops or DTYPES)}
        origin = "user"
    if user_bw is not None:
        bw = user_bw
    return Peaks(tflops, bw, origin, spec, user_bw is not None, hint, measured, assumed)
