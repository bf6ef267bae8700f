"""read_trace(path) -> Trace: Kineto / Chrome-trace JSON (.json or .json.gz) into columns.

Pipeline and its costs on the largest shared trace (216k events, 3 MB gz, 54 MB JSON):
  1. gunzip in 1 MiB pieces into one growing buffer, ~65 ms (zlib.decompress on the whole
     file measured up to ~2x the memory and slower);
  2. one msgspec pass splits `traceEvents` into raw slices (no copies), ~35 ms;
  3. batches of BATCH events are decoded into typed Structs (schema.py: only the fields we
     use) and turned into columns (columns.py), then dropped, so peak memory holds one batch
     of Python objects, not 216k of them.
Whole read: ~0.43 s and 118 MB peak RSS (31 MB of it the interpreter, numpy and msgspec);
tests/unit/trace/test_trace_speed.py prints the current figures.

Time units. The Chrome trace format defines `ts`/`dur` in microseconds; `displayTimeUnit`
("ms"/"ns") only tells a viewer how to print them. The shared "ns" trace
(hta_resnet_v100_ns_timeunit) proves it: displayTimeUnit is "ns" but ts = 1712195495502094.5,
which as µs is April 2024 (the file's name says Apr_03) and as ns would be 1970; its
ProfilerSteps last 35-96 ms read as µs. Since PyTorch 2.3 (pytorch/pytorch#122425) Kineto
writes µs with three decimals, i.e. ns *resolution*. HTA's parser does the same reading: it
treats float `ts` as µs and rounds ts up and ts+dur down to whole µs
(hta/common/trace_parser.py, _parse_trace_dataframe_json). We keep the fractions instead.
A file whose timestamps really are ns (some converters write them) is recognised by
magnitude: ts > 1e17 is year 5138 as µs but 1973 as ns. Pass time_unit= to override.
Precision: float64 spacing at epoch-µs magnitudes (1.7e15) is 0.25 µs, so the ns digits of
such files are rounded to ±0.125 µs when parsed; monotonic-clock traces (ts ~ 4e12) keep ~1 ns.
"""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trainprof.errors import InputError
from trainprof.trace.columns import ColumnBuilder
from trainprof.trace.kinds import GPU_WORK_KINDS, kind_mask, kinds_for
from trainprof.trace.schema import (
    VERSION_FIELDS,
    DeviceProperties,
    DistributedInfo,
    Event,
    EventCore,
    EventLenient,
    coerce_args,
    TopLevel,
)
from trainprof.trace.tables import Collectives, Device, Flows, GpuDetail, Trace, TraceMeta

BATCH = 4096  # events per decode batch: ~1 MB of JSON; smaller batches cost more calls,
# larger ones more memory and worse cache reuse (measured: 5k fastest, 50k +45% time).
NS_THRESHOLD = 1e17  # ts above this cannot be µs since the epoch (year 5138): it is ns
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_NON_SPACE = re.compile(rb"\S")

# strict=False lets "123" decode as an int/float where a number is expected.
_TOP = msgspec.json.Decoder(TopLevel, strict=False)
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[Event], strict=False)
_EVENT = msgspec.json.Decoder(Event, strict=False)
_EVENT_LENIENT = msgspec.json.Decoder(EventLenient, strict=False)
_EVENT_CORE = msgspec.json.Decoder(EventCore, strict=False)


def read_trace(path: str | os.PathLike, *, time_unit: str | None = None) -> Trace:
    """Read one Kineto/Chrome trace file into a columnar `Trace`.

    time_unit: "us" or "ns" to override detection (see module docstring).
    Raises InputError (exit code 2) with one line naming the file for a missing, empty,
    truncated or non-trace file. Malformed single events are skipped and counted
    (`Trace.skip_reasons`), never fatal.
    """
    if time_unit not in (None, "us", "ns"):
        raise ValueError(f"time_unit must be 'us', 'ns' or None, not {time_unit!r}")
    p = Path(path)
    buf = _load(p)
    raws, top, notes = _split(p, buf)
    header = _header(top, notes)  # decode the few metadata fields before the buffer goes
    del top
    builder = ColumnBuilder()
    for start in range(0, len(raws), BATCH):
        builder.add(_decode_batch(raws[start : start + BATCH], builder))
    del raws, buf  # the raw slices pin the whole input buffer; free it before building

    unit = time_unit or ("ns" if builder.max_ts() > NS_THRESHOLD else "us")
    cols = builder.finish(1e-3 if unit == "ns" else 1.0)
    cols["kind"] = kinds_for(cols["cat_id"], cols["name_id"], list(cols["categories"]), list(cols["names"]))
    meta = TraceMeta(device_name=_device_name(header["devices"], cols), time_unit=unit, **header)
    if unit == "ns" and time_unit is None:
        notes.append("timestamps look like nanoseconds (ts > 1e17); converted to microseconds")
    if builder.args_coerced:
        notes.append(f"{builder.args_coerced} events had args of unexpected types (unusable values ignored)")
    if builder.args_dropped:
        notes.append(f"{builder.args_dropped} events had unreadable args (kept without them)")
    if builder.skips:
        total = sum(builder.skips.values())
        notes.append(f"skipped {total} malformed events: " + ", ".join(f"{n} {r}" for r, n in builder.skips.items()))
    ignored = {ph: n for ph, n in builder.phase_counts.items() if ph in ("B", "E")}
    if ignored:
        notes.append(f"ignored {sum(ignored.values())} B/E duration events (only complete 'X' events are read)")
    if not len(cols["ts_us"]):
        notes.append("the trace has no complete (ph 'X') events")
    return Trace(
        path=str(p),
        flows=Flows(**cols.pop("flows")),
        gpu=GpuDetail(**cols.pop("gpu")),
        collectives=Collectives(**cols.pop("collectives")),
        meta=meta,
        phase_counts=dict(builder.phase_counts),
        skip_reasons=dict(builder.skips),
        notes=tuple(notes),
        **cols,
    )


# ------------------------------------------------------------------------------ bytes
def _load(p: Path) -> bytes | bytearray:
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory, not a trace file") from None
    except OSError as e:
        raise InputError(f"{p}: cannot read ({e.strerror or e})") from None
    if not raw:
        raise InputError(f"{p}: empty file")
    # Sniff the content, not the suffix: a .json that is really gzip (or the reverse) reads.
    gz = raw[:2] == _GZIP_MAGIC
    data: bytes | bytearray = _gunzip(p, raw) if gz else raw
    del raw
    if data[:3] == _BOM:
        data = data[3:]
    if not data or data.isspace():  # isspace stops at the first non-space byte; strip() copies
        raise InputError(f"{p}: empty file" + (" (empty after decompression)" if gz else ""))
    return data


def _gunzip(p: Path, raw: bytes) -> bytearray:
    """Decompress 1 MiB at a time into one growing buffer. Growth is by realloc, which glibc
    does with mremap for large blocks (no copy), so the peak is ~1x the output; bytes-based
    zlib.decompress/gzip.decompress measured up to ~2x and 4x slower on the 54 MB trace."""
    out = bytearray()
    rest = raw
    try:
        while rest:
            d = zlib.decompressobj(wbits=31)  # 31: gzip wrapper, CRC-32 and ISIZE checked
            while rest and not d.eof:
                out += d.decompress(rest, 1 << 20)
                rest = d.unconsumed_tail
            if not d.eof:
                raise InputError(f"{p}: truncated gzip file (the compressed stream ends early)")
            rest = d.unused_data.lstrip(b"\x00")  # next member, if any; zero padding is legal
    except zlib.error as e:
        raise InputError(f"{p}: corrupt gzip data ({e})") from None
    return out


# ------------------------------------------------------------------------------ JSON
def _split(p: Path, buf: bytes | bytearray) -> tuple[list[msgspec.Raw], TopLevel | None, list[str]]:
    """Top-level object -> (raw event slices, metadata struct, notes)."""
    m = _NON_SPACE.search(buf)
    first = buf[m.start() : m.start() + 1] if m else b""
    try:
        if first == b"[":  # Chrome's "JSON Array Format": a bare list of events, no metadata
            return _ARRAY.decode(buf), None, ["JSON Array Format trace: no metadata"]
        top = _TOP.decode(buf)
    except msgspec.ValidationError:
        if first == b"{":  # every other TopLevel field is Raw, so only traceEvents can fail
            raise InputError(f"{p}: 'traceEvents' is not a list") from None
        raise InputError(f"{p}: not a trace (the JSON top level is not an object)") from None
    except msgspec.DecodeError as e:
        raise InputError(f"{p}: invalid JSON ({e})") from None
    if top.traceEvents is None:
        raise InputError(f"{p}: no 'traceEvents' list; not a Kineto/Chrome trace")
    events = top.traceEvents
    top.traceEvents = None
    return events, top, []


def _decode_batch(raws: list[msgspec.Raw], builder: ColumnBuilder) -> list[Event]:
    try:
        return _EVENTS.decode(b"".join((b"[", b",".join(raws), b"]")))
    except msgspec.DecodeError:
        pass
    # Some event in this batch has a field of the wrong type: decode one by one, keep what
    # we can. Only the bad batch pays for this.
    out = []
    for raw in raws:
        try:
            out.append(_EVENT.decode(raw))
            continue
        except msgspec.DecodeError:
            pass
        try:
            ev = _EVENT_LENIENT.decode(raw)
            builder.args_coerced += 1
            out.append(Event(ph=ev.ph, cat=ev.cat, name=ev.name, pid=ev.pid, tid=ev.tid, ts=ev.ts, dur=ev.dur,
                             id=ev.id, bp=ev.bp, args=None if ev.args is None else coerce_args(ev.args)))
            continue
        except msgspec.DecodeError:
            pass
        try:
            core = _EVENT_CORE.decode(raw)
        except msgspec.DecodeError:
            builder.skips["undecodable event (not an object, or a core field of the wrong type)"] += 1
            continue
        builder.args_dropped += 1
        out.append(Event(ph=core.ph, cat=core.cat, name=core.name, pid=core.pid, tid=core.tid,
                         ts=core.ts, dur=core.dur, id=core.id, bp=core.bp))
    return out


# ------------------------------------------------------------------------------ metadata
def _field(top: TopLevel, name: str, typ: Any, notes: list[str]) -> Any:
    raw = getattr(top, name)
    if not raw:
        return None
    try:
        return msgspec.json.decode(raw, type=typ, strict=False)
    except msgspec.DecodeError:
        notes.append(f"ignored unreadable metadata field {name!r}")
        return None


def _int(v: Any) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None


def _header(top: TopLevel | None, notes: list[str]) -> dict[str, Any]:
    """The allow-listed metadata as plain values (TraceMeta fields except device_name)."""
    if top is None:
        return {"devices": ()}
    props = _field(top, "deviceProperties", list[DeviceProperties], notes) or []
    devices = tuple(
        Device(id=_int(d.id) if d.id is not None else i, name=d.name or "", total_memory_bytes=_int(d.totalGlobalMem),
               compute_major=_int(d.computeMajor), compute_minor=_int(d.computeMinor), num_sms=_int(d.numSms),
               max_threads_per_block=_int(d.maxThreadsPerBlock), max_threads_per_sm=_int(d.maxThreadsPerMultiprocessor),
               warp_size=_int(d.warpSize))
        for i, d in enumerate(props)
    )
    dist = _field(top, "distributedInfo", DistributedInfo, notes)
    versions = [(f, _field(top, f, Any, notes)) for f in VERSION_FIELDS]
    if dist is not None:
        versions.append(("nccl_version", dist.nccl_version))
    display = _field(top, "displayTimeUnit", Any, notes)
    schema = _field(top, "schemaVersion", Any, notes)
    return {
        "devices": devices,
        "rank": _int(dist.rank) if dist else None,
        "world_size": _int(dist.world_size) if dist else None,
        "backend": dist.backend if dist else None,
        "display_time_unit": display if isinstance(display, str) else None,
        "base_time_ns": _int(_field(top, "baseTimeNanoseconds", Any, notes)),
        "schema_version": schema if isinstance(schema, (int, str)) and not isinstance(schema, bool) else None,
        "versions": tuple((k, str(v)) for k, v in versions
                          if isinstance(v, (int, float, str)) and not isinstance(v, bool)),
    }


def _device_name(devices: tuple[Device, ...], cols: dict) -> str | None:
    """Name of the device most of this rank's GPU work ran on; None for a CPU-only trace.

    deviceProperties lists every visible GPU (8 on a DGX), so we pick the one whose id the
    kernels' args.device names. If that id is not listed, fall back to the common name
    when all listed devices share it (homogeneous nodes).
    """
    work = kind_mask(cols["kind"], GPU_WORK_KINDS)
    dev = cols["device"][work]
    dev = dev[dev >= 0]
    if not len(dev):
        return None
    main = int(np.bincount(dev).argmax())
    for d in devices:
        if d.id == main and d.name:
            return d.name
    names = {d.name for d in devices if d.name}
    return names.pop() if len(names) == 1 else None
