"""What we read from a Kineto/Chrome trace: an allow-list written as msgspec Structs.

msgspec skips every JSON key a Struct does not declare without building a Python object for
it. That is what makes decoding fast (no dict per event, no `args` dict) and what keeps the
rest of the file out of memory: traces embed environment variables, host names and tokens in
top-level metadata (the TraceLens HF traces carried an HF_TOKEN there), and none of it can
reach our objects, logs or reports because no field here names it.

Field types are deliberately loose (unions, `None`, defaults) because real traces vary:
pid/tid are ints for CPU and GPU lanes but strings for the profiler's own spans
("Spans"/"PyTorch Profiler"); "Python parent id" is null for root frames; legacy (2021)
traces spell "external id" in lower case. Anything stricter would reject whole files.

Int fields default to -1 ("absent") rather than None so columns can be built with one
`np.array(list, int64)` call; an explicit JSON null still arrives as None and is mapped to
-1 by the builder.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec

IntOrStr = Union[int, str, None]
Number = Union[int, float, str, None]
RAW_EMPTY = msgspec.Raw()


def _f(json_name: str, default=None):
    return msgspec.field(default=default, name=json_name)


class Args(msgspec.Struct, gc=False):
    """The `args` keys we use. gc=False: these hold no reference cycles, so the ~200k
    instances of a large trace need not be tracked by the cycle collector (16 bytes less each)."""

    correlation: Optional[int] = -1
    external_id: Optional[int] = _f("External id", -1)
    external_id_legacy: Optional[int] = _f("external id", -1)  # pre-2022 Kineto
    # ROCm runtime calls write stream as a hex string ("0x0"); the builder parses those.
    stream: IntOrStr = -1
    device: IntOrStr = -1
    python_id: Optional[int] = _f("Python id", -1)
    python_parent_id: Optional[int] = _f("Python parent id", -1)
    ev_idx: Optional[int] = _f("Ev Idx", -1)
    # Shapes stay as raw JSON text: most analyses never look at them, and the few distinct
    # values (a few thousand per trace) are decoded once each when the table is built.
    input_dims: msgspec.Raw = _f("Input Dims", RAW_EMPTY)
    input_dims_legacy: msgspec.Raw = _f("Input dims", RAW_EMPTY)
    input_type: msgspec.Raw = _f("Input type", RAW_EMPTY)
    input_strides: msgspec.Raw = _f("Input Strides", RAW_EMPTY)
    concrete_inputs: msgspec.Raw = _f("Concrete Inputs", RAW_EMPTY)
    # NCCL/RCCL collectives (record_param_comms cpu_ops and, in newer traces, the kernels).
    collective: Optional[str] = _f("Collective name")
    process_group: Optional[str] = _f("Process Group Name")
    in_nelems: Optional[int] = _f("In msg nelems", -1)
    out_nelems: Optional[int] = _f("Out msg nelems", -1)
    dtype: Optional[str] = None
    group_size: Optional[int] = _f("Group size", -1)
    # The collective's sequence number in its process group (PyTorch's saveNcclMeta writes it
    # when known, torch/csrc/profiler/util.cpp; collectives and p2p ops may count separately).
    seq: Optional[int] = _f("Seq", -1)
    # Memcpy / memset.
    bytes: Optional[int] = -1
    bandwidth_gbs: Optional[float] = _f("memory bandwidth (GB/s)", float("nan"))
    # Kernel launch configuration (CUPTI fields; absent on ROCm).
    # Inductor's Triton cpu_ops put a string here ("grid(100,)"); _triples ignores it.
    grid: Union[list[int], str, None] = None
    block: Union[list[int], str, None] = None
    registers_per_thread: Optional[int] = _f("registers per thread", -1)
    shared_memory: Optional[int] = _f("shared memory", -1)
    occupancy_pct: Optional[float] = _f("est. achieved occupancy %", float("nan"))


EMPTY_ARGS = Args()

# The same keys with every non-Raw value untyped: used only for an event whose args failed
# to decode, so one odd value costs that value (coerced or defaulted), not the whole args.
LenientArgs = msgspec.defstruct(
    "LenientArgs",
    [(f.name, f.type if f.type is msgspec.Raw else Any, msgspec.field(default=f.default, name=f.encode_name))
     for f in msgspec.structs.fields(Args)],
    gc=False,
)


class Event(msgspec.Struct, gc=False):
    """One element of `traceEvents`. Only "X" (complete) and flow (s/t/f) events are kept."""

    ph: str = ""
    cat: Optional[str] = None
    name: Optional[str] = None
    pid: IntOrStr = None
    tid: IntOrStr = None
    ts: Optional[float] = None
    dur: Optional[float] = None
    id: IntOrStr = None  # flow id; equals the CUPTI correlation id for ac2g flows
    bp: Optional[str] = None  # flow binding point ("e" = enclosing slice)
    args: Optional[Args] = None


class EventLenient(msgspec.Struct, gc=False):
    """Fallback for one event whose `args` did not decode as Args."""

    ph: str = ""
    cat: Optional[str] = None
    name: Optional[str] = None
    pid: IntOrStr = None
    tid: IntOrStr = None
    ts: Optional[float] = None
    dur: Optional[float] = None
    id: IntOrStr = None
    bp: Optional[str] = None
    args: Optional[LenientArgs] = None  # type: ignore[valid-type]


def coerce_args(lenient) -> Args:
    """LenientArgs -> Args, keeping each value that converts and defaulting the rest."""
    values = {}
    for f in msgspec.structs.fields(Args):
        v = getattr(lenient, f.name)
        if v is f.default or f.type is msgspec.Raw:
            values[f.name] = v
            continue
        try:
            values[f.name] = msgspec.convert(v, type=f.type, strict=False)
        except msgspec.ValidationError:
            pass
    return Args(**values)


class EventCore(msgspec.Struct, gc=False):
    """Last fallback, for `args` that is not even an object: keep the event, drop args."""

    ph: str = ""
    cat: Optional[str] = None
    name: Optional[str] = None
    pid: IntOrStr = None
    tid: IntOrStr = None
    ts: Optional[float] = None
    dur: Optional[float] = None
    id: IntOrStr = None
    bp: Optional[str] = None


class DeviceProperties(msgspec.Struct, gc=False):
    """The `deviceProperties` keys needed to identify a GPU and look up its peaks."""

    id: Optional[int] = None
    name: Optional[str] = None
    totalGlobalMem: Number = None
    computeMajor: Number = None
    computeMinor: Number = None
    numSms: Number = None
    maxThreadsPerBlock: Number = None
    maxThreadsPerMultiprocessor: Number = None
    warpSize: Number = None
    gcnArchName: Optional[str] = None  # ROCm: "gfx942:sramecc+:xnack-" (the ISA names the architecture)


class DistributedInfo(msgspec.Struct, gc=False):
    """Rank and world size; `pg_config` (this rank's process groups: name, description,
    ranks) stays raw and is decoded on its own (reader.py), so a malformed list costs the
    groups, not the rank."""

    rank: Number = None
    world_size: Number = None
    backend: Optional[str] = None
    nccl_version: Number = None
    pg_config: msgspec.Raw = RAW_EMPTY


class ProcessGroupConfig(msgspec.Struct, gc=False):
    """One entry of distributedInfo.pg_config (torch 2.x): the fields we use."""

    pg_name: Union[str, int, None] = None
    pg_desc: Optional[str] = None
    ranks: Union[list[int], str, None] = None  # a list; some versions write it as a string


class TrainprofMesh(msgspec.Struct, gc=False):
    """`trainprof_mesh`, written by trainprof's own parallel runs (workload/mesh.py)."""

    dims: list[tuple[str, int]] = []
    schedule: Optional[str] = None
    microbatches: Optional[int] = None
    threads: dict[str, str] = {}


class TopLevel(msgspec.Struct, gc=False):
    """The top-level object. Each event stays raw here (a slice of the input, no copy); they
    are decoded in batches by reader.py so only one batch of Event objects is alive at once.

    Metadata fields are Raw too and decoded one by one, so a malformed metadata value costs
    that one field (counted as a warning) instead of the whole trace.
    """

    traceEvents: Optional[list[msgspec.Raw]] = None
    deviceProperties: msgspec.Raw = RAW_EMPTY
    distributedInfo: msgspec.Raw = RAW_EMPTY
    trainprof_mesh: msgspec.Raw = RAW_EMPTY
    displayTimeUnit: msgspec.Raw = RAW_EMPTY
    baseTimeNanoseconds: msgspec.Raw = RAW_EMPTY
    schemaVersion: msgspec.Raw = RAW_EMPTY
    # Versions only: the issue allows "device name and properties, world size, rank, versions".
    cupti_version: msgspec.Raw = RAW_EMPTY
    cuda_runtime_version: msgspec.Raw = RAW_EMPTY
    cuda_driver_version: msgspec.Raw = RAW_EMPTY
    hip_runtime_version: msgspec.Raw = RAW_EMPTY
    hip_driver_version: msgspec.Raw = RAW_EMPTY
    roctracer_version: msgspec.Raw = RAW_EMPTY


VERSION_FIELDS = (
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "hip_runtime_version",
    "hip_driver_version",
    "roctracer_version",
)
