"""read_trace(path) -> Trace: Kineto / Chrome-trace JSON (.json or .json.gz) into columns.

Pipeline:
  1. stream.py reads and gunzips the file in 4 MB pieces, in a second thread for gzip input
     (zlib releases the GIL, so decompression overlaps the rest on another core), and cuts
     `traceEvents` into batches of ~256 KB of JSON as the pieces arrive; the decompressed
     file is never whole in memory;
  2. each batch is read by the C scanner (_scan.c, built where a compiler is found) into fixed
     records, and scanned.py makes columns of every 4096 of them; no Python object per event;
  3. without the scanner, or for a file holding an event it leaves to msgspec (a lax
     conversion such as "ts": "12.5", an escaped key, an int beyond int64), the whole file
     goes the pure way: each batch decoded into typed Structs (schema.py: only the fields we
     use), then columns.py turns every 4096 events into numpy columns and drops the objects.
     Both give the same Trace, bit for bit (tests/unit/trace/test_scanner.py).
Time and peak memory of each path, measured with benchmarks/trace_read.py: docs/benchmarks.md,
"Trace reading" (the scanner reads about twice as fast; streaming keeps the peak near the
kept columns instead of the decompressed file).

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
from contextlib import closing
from pathlib import Path
from typing import Any, Iterator

import msgspec
import numpy as np

from trainprof.bounded import DEPTH_LIMIT, NAME_LIMIT, max_name_chars
from trainprof.errors import InputError
from trainprof.trace import limits
from trainprof.trace.columns import ColumnBuilder
from trainprof.trace.kinds import GPU_WORK_KINDS, kind_mask, kinds_for
from trainprof.trace.schema import (
    VERSION_FIELDS,
    DeviceProperties,
    DistributedInfo,
    Event,
    ProcessGroupConfig,
    TrainprofMesh,
    EventCore,
    EventLenient,
    coerce_args,
    TopLevel,
)
from trainprof.trace.stream import Batch, Tail, Whole, check_stretch, chunks, open_trace, prefetch, split
from trainprof.trace.process_groups import kept_desc
from trainprof.trace.tables import (Collectives, Device, Flows, GpuDetail, MeshInfo, ProcessGroupInfo, Trace,
                                    TraceMeta)

try:  # the optional C scanner (setup.py builds it where a compiler is found; its speed-up:
    # docs/benchmarks.md, "Trace reading")
    from trainprof.trace import _scan
    from trainprof.trace.scanned import ScanBuilder
except ImportError:
    _scan = None
    ScanBuilder = None  # type: ignore[assignment,misc]
_SCAN_BUILDER = ScanBuilder or ()  # isinstance(x, ()) is False

BATCH = 4096  # raw events per decode call where the file is not streamed (tail, whole file)
NS_THRESHOLD = 1e17  # ts above this cannot be µs since the epoch (year 5138): it is ns
_GZIP_MAGIC = b"\x1f\x8b"
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
    if _scan is not None:
        try:
            builder, top, notes, stats = _read(p, ScanBuilder())
        except _Fallback:  # an event the C scanner leaves to msgspec: the whole file the pure way
            builder, top, notes, stats = _read(p, ColumnBuilder())
    else:
        builder, top, notes, stats = _read(p, ColumnBuilder())
    header = _header(top, notes)
    if stats.invalid_utf8:
        notes.append(f"replaced {stats.invalid_utf8} invalid UTF-8 sequences (in names or args) with U+FFFD")
    if builder.surrogates:
        notes.append(f"replaced {builder.surrogates} lone UTF-16 surrogate escapes (such as \\udc00) with U+FFFD")
    # The majority decides, not the maximum: one event with ts 1e300 must not rescale the rest.
    unit = time_unit or ("ns" if builder.ts_share_above(NS_THRESHOLD) > 0.5 else "us")
    if top is None and not builder.phase_counts and not builder.skips:  # (counted once flushed)
        # `[]` is valid JSON Array Format but holds nothing at all: no events, no metadata.
        raise InputError(f"{p}: an empty JSON array; not a trace")
    del top
    cols = builder.finish(1e-3 if unit == "ns" else 1.0)
    _check_names(p, cols, header["devices"])
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


def _read(p: Path, builder: ColumnBuilder) -> tuple[ColumnBuilder, TopLevel | None, list[str], limits.Stats]:
    """Stream the file's events into `builder`; its metadata, notes and byte statistics."""
    f, first = open_trace(p)
    gz = first[:2] == _GZIP_MAGIC
    # gzip: decompression runs in a thread beside the rest, on a second core (zlib releases
    # the GIL). Plain JSON is only read, not worth a thread.
    stats = limits.Stats()
    raw = prefetch(chunks(p, f, first), depth=2) if gz else chunks(p, f, first)
    with closing(limits.guard(p, raw, stats)) as pieces:
        try:
            top, notes = _consume(p, gz, split(pieces, str(p)), builder)
        except RecursionError:  # msgspec recurses per nesting level (~1000 with Python's limit)
            raise InputError(f"{p}: JSON nested too deep (an event nests over ~{DEPTH_LIMIT} levels); "
                             "not a Kineto/Chrome trace") from None
    return builder, top, notes, stats


# ------------------------------------------------------------------------------ JSON
class _Fallback(Exception):
    """The C scanner declined an event msgspec reads (a lax conversion, an odd spelling)."""


class _BadJSON(Exception):
    """Invalid JSON inside a batch: args (msgspec's message, document offset of its byte 0)."""


def _consume(p: Path, gz: bool, items: Iterator[Batch | Tail | Whole],
             builder: ColumnBuilder) -> tuple[TopLevel | None, list[str]]:
    """Decode the items of stream.split into `builder`; return the metadata and notes.

    A batch whose cut was a wrong guess (stream.py) is carried over and retried with the
    batches after it, once the carried bytes have doubled since the last try (so a long run
    of wrong guesses costs linear, not quadratic, time); the tail takes whatever is left.
    """
    carry: bytearray | None = None
    carry_offset = tried = 0
    shape = None  # the carry's shape, checked once it passes STRETCH (wrong cuts one after another)
    try:
        for item in items:
            if isinstance(item, Batch):
                if carry is None:
                    if _try_batch(item.json, item.offset, builder):
                        continue
                    carry, carry_offset, tried, shape = bytearray(), item.offset, len(item.json), None
                elif len(carry) + len(item.json) >= 2 * tried:
                    with memoryview(item.json) as mv:
                        data = b"".join((b"[", carry, mv[1:]))
                    if _try_batch(data, carry_offset, builder):
                        carry = None
                        continue
                    tried = len(data)
                fed = len(carry)
                with memoryview(item.json) as mv:
                    carry += mv[1:-1]
                carry += item.sep
                # a string holding `}, {` again and again makes every cut wrong: bound the carry too
                shape = check_stretch(shape, str(p), carry, 0, fed, carry_offset, depth=1)
            elif isinstance(item, Tail):
                return _tail(p, item, carry, carry_offset, builder)
            else:
                return _whole(p, gz, item.data, builder)
    except _BadJSON as e:
        for _ in items:  # a gzip error further on is the real cause; it raises from here
            pass
        msg, base = e.args
        raise InputError(f"{p}: invalid JSON ({_at(msg, lambda n: base + n)})") from None
    raise AssertionError("stream.split ends with a Tail or a Whole")


_BYTE = re.compile(r"\(byte (\d+)\)")


def _at(msg: str, where) -> str:
    """msgspec's message with its "(byte N)" moved from the decoded buffer to the document."""
    return _BYTE.sub(lambda m: f"(byte {where(int(m.group(1)))})", msg)


def _try_batch(data: bytes, offset: int, builder: ColumnBuilder) -> bool:
    """Add the events of one `[...]` batch; False when its cut was not between two events.
    Raises _BadJSON for invalid JSON before the cut: the batch starts between events, so an
    error before its last byte is in the file, not in our guess."""
    if _fast_batch(data, builder):
        return True
    try:
        raws = _ARRAY.decode(data)
    except msgspec.DecodeError as e:
        fixed, n = limits.fix_surrogates(data)  # both readers refuse a lone surrogate escape; both take the fix
        if n:
            ok = _try_batch(fixed, offset, builder)  # same length: an error's offset stays true
            builder.surrogates += n if ok else 0  # a wrong cut is retried (and counted) with what follows
            return ok
        msg = str(e)
        m = _BYTE.search(msg)
        if m is None or "trailing characters" in msg or int(m.group(1)) >= len(data) - 1:
            return False  # truncated (cut inside a string or a nested value) or past the array
        raise _BadJSON(msg, offset - 1) from None  # byte 0 of data is our '['
    _add_each(raws, builder)
    return True


def _fast_batch(data: bytes, builder: ColumnBuilder) -> bool:
    """The whole batch in one call (C scanner, or msgspec into Structs); False: it did not go."""
    if isinstance(builder, _SCAN_BUILDER):
        return builder.scan(data)
    try:
        events = _EVENTS.decode(data)
    except msgspec.DecodeError:
        return False
    builder.add(events)
    return True


def _add_each(raws: list[msgspec.Raw], builder: ColumnBuilder) -> None:
    """Valid JSON whose events did not all decode: one by one, keeping what we can."""
    if isinstance(builder, _SCAN_BUILDER):
        raise _Fallback
    builder.add(_decode_each(raws, builder))


def _tail(p: Path, tail: Tail, carry: bytearray | None, carry_offset: int,
          builder: ColumnBuilder) -> tuple[TopLevel | None, list[str]]:
    """The last events and the metadata: prefix + carried batches + rest is one document."""
    rest_offset = carry_offset if carry is not None else tail.offset
    doc = b"".join((tail.prefix, carry or b"", tail.rest))
    del carry
    n = len(tail.prefix)
    try:
        try:
            raws, top, notes = _decode_top(doc, tail.array)
        except msgspec.DecodeError:
            doc, fixed = limits.fix_surrogates(doc)  # a lone surrogate escape (see _try_batch)
            if not fixed:
                raise
            raws, top, notes = _decode_top(doc, tail.array)
            builder.surrogates += fixed
    except msgspec.ValidationError:  # every other TopLevel field is Raw
        raise InputError(f"{p}: 'traceEvents' is not a list") from None
    except msgspec.DecodeError as e:
        msg = _at(str(e), lambda i: i if i < n else rest_offset + i - n)
        raise InputError(f"{p}: invalid JSON ({msg})") from None
    if raws is None:
        raise InputError(f"{p}: no 'traceEvents' list; not a Kineto/Chrome trace")
    for start in range(0, len(raws), BATCH):
        _decode_batch(raws[start : start + BATCH], builder)
    return top, notes


def _decode_top(doc: bytes, array: bool) -> tuple[list[msgspec.Raw], TopLevel | None, list[str]]:
    if array:
        return _ARRAY.decode(doc), None, ["JSON Array Format trace: no metadata"]
    top = _TOP.decode(doc)
    raws = top.traceEvents
    top.traceEvents = None
    return raws, top, []


def _whole(p: Path, gz: bool, data: bytes | bytearray, builder: ColumnBuilder) -> tuple[TopLevel | None, list[str]]:
    """The old path, for a document stream.split cannot cut (and every error it may hold)."""
    if not data or data.isspace():  # isspace stops at the first non-space byte; strip() copies
        raise InputError(f"{p}: empty file" + (" (empty after decompression)" if gz else ""))
    try:
        raws, top, notes = _split(p, data)
    except InputError:
        data, fixed = limits.fix_surrogates(data)  # a lone surrogate escape (see _try_batch)
        if not fixed:
            raise
        raws, top, notes = _split(p, data)
        builder.surrogates += fixed
    for start in range(0, len(raws), BATCH):
        _decode_batch(raws[start : start + BATCH], builder)
    return top, notes


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


def _decode_batch(raws: list[msgspec.Raw], builder: ColumnBuilder) -> None:
    if not _fast_batch(b"".join((b"[", b",".join(raws), b"]")), builder):
        _add_each(raws, builder)


def _decode_each(raws: list[msgspec.Raw], builder: ColumnBuilder) -> list[Event | None]:
    """Some event of a batch has a field of the wrong type: decode one by one and keep what
    we can. Only the bad batch pays for this."""
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
            out.append(None)  # keeps the builder's windows where they were (columns.WINDOW)
            builder.holes = True
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
               warp_size=_int(d.warpSize), arch=d.gcnArchName if isinstance(d.gcnArchName, str) else None)
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
        "process_groups": _process_groups(dist, notes),
        "mesh": _mesh(top, notes),
    }


def _process_groups(dist: DistributedInfo | None, notes: list[str]) -> tuple[ProcessGroupInfo, ...]:
    """distributedInfo.pg_config: this rank's process groups (name, description, ranks)."""
    if dist is None or not len(dist.pg_config):
        return ()
    try:
        groups = msgspec.json.decode(dist.pg_config, type=list[ProcessGroupConfig], strict=False)
    except msgspec.DecodeError:
        notes.append("ignored an unreadable distributedInfo.pg_config")
        return ()
    out = []
    for g in groups:
        ranks = g.ranks
        if isinstance(ranks, str):  # "[0, 1]" in some versions
            try:
                ranks = msgspec.json.decode(ranks, type=list[int])
            except msgspec.DecodeError:
                ranks = None
        if g.pg_name is None or not isinstance(ranks, list):
            continue
        out.append(ProcessGroupInfo(name=str(g.pg_name), desc=kept_desc(g.pg_desc), ranks=tuple(ranks)))
    return tuple(out)


def _mesh(top: TopLevel, notes: list[str]) -> MeshInfo | None:
    """`trainprof_mesh`: the layout trainprof's own parallel runs record (workload/mesh.py)."""
    m = _field(top, "trainprof_mesh", TrainprofMesh, notes)
    if m is None:
        return None
    threads = []
    for tid, group in m.threads.items():
        try:
            threads.append((int(tid), str(group)))
        except ValueError:
            continue
    return MeshInfo(dims=tuple((str(a), int(n)) for a, n in m.dims), schedule=m.schedule,
                    microbatches=m.microbatches, threads=tuple(sorted(threads)))


def _check_names(path: Path, cols: dict, devices: tuple[Device, ...]) -> None:
    """Refuse a trace holding a name longer than TRAINPROF_MAX_NAME_CHARS (bounded.NAME_LIMIT)."""
    cap = max_name_chars()
    for what, strings in (("an event name", cols["names"]), ("an event category", cols["categories"]),
                          ("a device name", [d.name for d in devices])):
        longest = max(strings, key=len, default="")
        if len(longest) > cap:
            raise InputError(f"{path}: {what} of {len(longest):,} characters ({longest[:24]!r}...), longer than "
                             f"{cap:,}; refusing to read it (raise {NAME_LIMIT[0]} if this file is real)")


def _device_name(devices: tuple[Device, ...], cols: dict) -> str | None:
    """Name of the device most of this rank's GPU work ran on; None for a CPU-only trace.

    deviceProperties lists every visible GPU (8 on a DGX), so we pick the one whose id the
    kernels' args.device names. If that id is not listed, or the work names no device (the
    HTA Triton trace's one kernel), fall back to the common name when all listed devices
    share it (homogeneous nodes). None here is only "no name": whether the trace is a GPU
    trace comes from its events (trace/device.py), never from this name.
    """
    work = kind_mask(cols["kind"], GPU_WORK_KINDS)
    if not work.any():
        return None
    dev = cols["device"][work]
    dev = dev[dev >= 0]
    if len(dev):
        main = int(np.bincount(dev).argmax())
        for d in devices:
            if d.id == main and d.name:
                return d.name
    names = {d.name for d in devices if d.name}
    return names.pop() if len(names) == 1 else None
