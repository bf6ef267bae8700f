"""The facts a trace holds about its device, for hardware/identity.py: whether it is a GPU
trace (from its events), the deviceProperties of the device its work ran on, the vendor its
runtime calls and version fields name, and its distinct kernel names (architecture tags).
~5 ms on the 123k-row V100 DDP trace (two passes over the kind column, the rest over distinct names).
"""

from __future__ import annotations

import numpy as np

from trainprof.hardware.identity import DeviceFacts, DeviceIdentity, identify
from trainprof.trace.ids import distinct
from trainprof.trace.kinds import GPU_WORK_KINDS, LAUNCH_KINDS, Kind, kind_mask
from trainprof.trace.tables import Device, Trace

_AMD_VERSIONS = ("hip_runtime_version", "hip_driver_version", "roctracer_version")
_NVIDIA_VERSIONS = ("cupti_version", "cuda_runtime_version", "cuda_driver_version")


def device_facts(trace: Trace) -> DeviceFacts:
    kind = trace.kind
    work = kind_mask(kind, GPU_WORK_KINDS)
    calls = kind_mask(kind, LAUNCH_KINDS)
    kernels = distinct(trace.name_id[kind == Kind.KERNEL], len(trace.names))
    main = _main_device(trace, work)
    return DeviceFacts(
        gpu_activity=bool(work.any()), gpu_calls=bool(calls.any()), name=trace.device_name,
        compute=(main.compute_major, main.compute_minor) if main and main.compute_major is not None
        and main.compute_minor is not None else None,
        gcn_arch=main.arch if main else None, vendor_hint=_vendor_hint(trace, calls),
        kernel_names=tuple(trace.names[i] for i in kernels))


def trace_identity(trace: Trace) -> DeviceIdentity:
    """The trace's device (hardware/identity.identify over device_facts)."""
    return identify(device_facts(trace))


def _main_device(trace: Trace, work: np.ndarray) -> Device | None:
    """The deviceProperties entry of the device most GPU work ran on; with no usable id, the
    one entry, or the first when all entries agree on name and architecture (one node)."""
    devs = trace.devices
    if not devs:
        return None
    ids = trace.device[work]
    ids = ids[ids >= 0]
    if len(ids):
        main = int(np.bincount(ids).argmax())
        hit = next((d for d in devs if d.id == main), None)
        if hit is not None:
            return hit
    same = {(d.name, d.compute_major, d.compute_minor, d.arch) for d in devs}
    return devs[0] if len(same) == 1 else None


def _vendor_hint(trace: Trace, calls: np.ndarray) -> str | None:
    versions = dict(trace.meta.versions)
    if any(k in versions for k in _AMD_VERSIONS):
        return "amd"
    if any(k in versions for k in _NVIDIA_VERSIONS):
        return "nvidia"
    for i in distinct(trace.name_id[calls], len(trace.names)):
        n = trace.names[i]
        if n.startswith("hip"):
            return "amd"
        if n.startswith("cu"):  # cudaLaunchKernel, cuLaunchKernel
            return "nvidia"
    return None
