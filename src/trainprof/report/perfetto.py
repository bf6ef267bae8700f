"""One Perfetto-ready trace for the whole job: every rank's tracks, nothing dropped, plus
what trainprof found.

Perfetto's JSON importer nests the complete ("X") events of a track by time and silently
drops an event that overlaps a sibling without nesting in it (google/perfetto issue #4280;
PyTorch traces have such events: async-looking CPU ops on one thread, kernels of one stream
recorded with overlapping timestamps). So each original track is laid out on as few lanes
as possible with every lane properly nested (greedy: an event goes on the first lane where
it nests or starts after everything open; else a new lane "… (overlap k)").

Written from the columns we parsed (name, category, times, rank, thread/stream), never from
raw args: a trace's metadata and args can hold environment variables and tokens.

Ranks are named and ordered by their mesh coordinates (`dp0·tp1 (rank 1)`: mesh_ranks).
Added per rank: "communication by axis" (each collective named by its parallelism axis, so
one colour per axis), "collective waits" (from this rank's arrival to the last rank's, clipped to
its own kernel, named after the rank it waited for: the pairing of analysis/job/collectives_job.py), "critical path" (the analysis's segments, when present), "idle
cause" (the GPU's longest idle gaps, each named by its cause: analysis/timeline/idle.py), and the
findings as instant events with their evidence. Clocks: each rank's clock moved onto rank 0's
with the offsets of analysis/job/collectives_job.py; times start at 0 at the job's first event.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np

from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.base import as_struct, or_default
from trainprof.trace import Kind, Trace

# rows that live on a GPU stream (keyed by stream, not by thread)
_GPU = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION, Kind.GPU_SYNC)


def lanes(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Lane per event (in the given arrays' order) such that on every lane events nest or
    follow each other. Greedy in (start, −duration) order."""
    order = np.lexsort((-(ends - starts), starts))
    stacks: list[list[float]] = []
    lane = np.zeros(len(starts), dtype=np.int64)
    for i in order.tolist():
        s, e = float(starts[i]), float(ends[i])
        for k, stack in enumerate(stacks):
            while stack and stack[-1] <= s:
                stack.pop()
            if not stack or e <= stack[-1]:
                stack.append(e)
                lane[i] = k
                break
        else:
            stacks.append([e])
            lane[i] = len(stacks) - 1
    return lane


def _ns(start_us: float, end_us: float) -> tuple[float, float]:
    """Start and duration rounded to the ns through the *end*, so an event that ends where the
    next begins still does after rounding (else Perfetto sees a 1 ns overlap and drops one)."""
    a, b = round(start_us, 3), round(end_us, 3)
    return a, round(b - a, 3)


def _track_label(t: Trace, row: int) -> str:
    if int(t.kind[row]) in _GPU:
        return f"GPU {int(t.device[row])} stream {int(t.stream[row])}"
    return f"thread {int(t.tid[row])}"


@dataclass(frozen=True)
class RankTracks:
    """What the export needs of one rank's trace: its events grouped into the original tracks
    and laid on nested lanes, in the trace's own clock (the job's clock is known only after
    every rank is analysed). Built where the trace is read (the per-rank analysis worker,
    jobs/analyze.py), so the driver never reads a trace again; ~30 bytes per event."""

    tracks: list[tuple[str, int, int]]
    """per track, in output order: label, lanes, events"""
    lane: np.ndarray
    """per event, in output order: its lane within its track"""
    start_us: np.ndarray
    end_us: np.ndarray
    name_id: np.ndarray
    cat_id: np.ndarray
    names: list[str]
    categories: list[str]
    first_us: float | None
    """the trace's first event (None: no events)"""


def rank_tracks(t: Trace) -> RankTracks:
    """One rank's trace as tracks of nested lanes (see the module docstring)."""
    rows = np.arange(len(t.ts_us))
    gpu = np.isin(t.kind, np.array(_GPU, dtype=t.kind.dtype))
    # a track: (GPU?, pid, tid-or-stream) of the original trace
    key_b = np.where(gpu, t.stream, t.tid)
    by_track: dict[tuple, list[int]] = {}
    for row, g, p, k in zip(rows.tolist(), gpu.tolist(), t.pid.tolist(), key_b.tolist()):
        by_track.setdefault((g, p, k), []).append(row)
    tracks, order, lane_parts = [], [], []
    for _, members in sorted(by_track.items(), key=lambda kv: (not kv[0][0], kv[0][1], kv[0][2])):
        idx = np.array(members, dtype=np.int64)
        lane = lanes(t.ts_us[idx], t.end_us[idx])
        tracks.append((_track_label(t, members[0]), int(lane.max()) + 1, len(members)))
        order.append(idx)
        lane_parts.append(lane)
    idx = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    return RankTracks(tracks, np.concatenate(lane_parts) if lane_parts else np.zeros(0, dtype=np.int64),
                      t.ts_us[idx], t.end_us[idx], t.name_id[idx], t.cat_id[idx], list(t.names),
                      list(t.categories), float(t.ts_us.min()) if len(t.ts_us) else None)


def track_events(rt: RankTracks, pid: int, shift_us: float, first_tid: int = 1) -> tuple[list[dict], int]:
    """Complete events of one rank on the job's clock (original time − `shift_us`), with a
    thread name per lane; returns (events, next tid)."""
    events: list[dict] = []
    tid, pos = first_tid, 0
    lane, start, end = rt.lane.tolist(), rt.start_us.tolist(), rt.end_us.tolist()
    name_id, cat_id = rt.name_id.tolist(), rt.cat_id.tolist()
    for label, n_lanes, count in rt.tracks:
        for n in range(n_lanes):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + n,
                           "args": {"name": label if n == 0 else f"{label} (overlap {n})"}})
        for i in range(pos, pos + count):
            ts, dur = _ns(start[i] - shift_us, end[i] - shift_us)
            events.append({"ph": "X", "name": rt.names[name_id[i]], "cat": rt.categories[cat_id[i]], "pid": pid,
                           "tid": tid + lane[i], "ts": ts, "dur": dur})
        pos += count
        tid += n_lanes
    return events, tid


def _waits(blocks: dict[int, dict], offsets: dict[int, float]) -> dict[int, list[tuple[float, float, str]]]:
    """Per rank, (start, end, label) on the reference clock: its waits at the matched
    collectives, as analysis/job/collectives_job.py computed them for the record (the same
    pairing and clipping; `offsets` are the record's, which that analysis reproduces)."""
    from trainprof.analysis.job.collectives_job import wait_intervals

    return wait_intervals(blocks)[1]


def _added_track(events: list[dict], pid: int, tid: int, name: str, slices: list[tuple[float, float, str]],
                 shift_us: float, cat: str) -> int:
    if not slices:
        return tid
    s = np.array([x[0] for x in slices])
    e = np.array([x[1] for x in slices])
    lane = lanes(s, e)
    for n in range(int(lane.max()) + 1):
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + n,
                       "args": {"name": name if n == 0 else f"{name} (overlap {n})"}})
    for (a, b, label), ln in zip(slices, lane.tolist()):
        ts, dur = _ns(a - shift_us, b - shift_us)
        events.append({"ph": "X", "name": label, "cat": cat, "pid": pid, "tid": tid + ln, "ts": ts, "dur": dur})
    return tid + int(lane.max()) + 1


def mesh_ranks(a: Analysis, ranks: list[int]) -> dict[int, tuple[str, tuple]]:
    """{rank: (process name, sort key)}: `dp1·tp0 (rank 2)`, ranks ordered replica by replica,
    stage by stage, then tensor-parallel peers (analysis/job/axes.py rank_coordinates: the
    recorded mesh, else the classified groups); `rank R` in rank order without either."""
    from trainprof.analysis.job.axes import coordinate_label, rank_coordinates

    job = a.multi_rank.collectives if a.multi_rank else None
    blocks = [r.collectives for r in a.ranks if r.collectives]
    mesh = next((m for b in blocks if (m := or_default(b.mesh, None))), None)
    groups = [(g.axis, list(g.ranks)) for g in (or_default(job.process_groups, None) or [])] if job else []
    coords = rank_coordinates(ranks, [tuple(d) for d in mesh.dims] if mesh else None, groups)
    out = {}
    for r in ranks:
        c = coords.get(r, {})
        label = coordinate_label(c)
        key = tuple(c.get(x, 0) for x in ("dp", "fsdp", "ep", "pp", "cp", "tp")) + (r,)
        out[r] = (f"{label} (rank {r})" if label else f"rank {r}", key)
    return out


def axis_slices(a: Analysis, rank: int) -> list[tuple[float, float, str, dict]]:
    """This rank's collectives on its own clock, each named by its axis (`tp`, `dp`, ...):
    Perfetto colours a slice by its name, so each axis gets one colour; the op, group and
    bytes are its args."""
    job = a.multi_rank.collectives if a.multi_rank else None
    axis = {g.name: g.axis for g in (or_default(job.process_groups, None) or [])} if job else {}
    rec = next((x for x in a.ranks if x.rank == rank), None)
    b = rec.collectives if rec else None
    if not axis or b is None:
        return []
    return [(s, e, axis.get(g, "unknown"), {"op": op, "group": g, "bytes": n})
            for s, e, g, op, n in zip(b.start_us, b.end_us, b.group, b.op, b.bytes)]


def _axis_track(events: list[dict], pid: int, tid: int, slices: list[tuple[float, float, str, dict]],
                shift_us: float) -> int:
    if not slices:
        return tid
    lane = lanes(np.array([x[0] for x in slices]), np.array([x[1] for x in slices]))
    for n in range(int(lane.max()) + 1):
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + n,
                       "args": {"name": "communication by axis" + (f" (overlap {n})" if n else "")}})
    for (a, b, name, args), ln in zip(slices, lane.tolist()):
        ts, dur = _ns(a - shift_us, b - shift_us)
        events.append({"ph": "X", "name": name, "cat": f"trainprof.axis.{name}", "pid": pid, "tid": tid + ln,
                       "ts": ts, "dur": dur, "args": args})
    return tid + int(lane.max()) + 1


def _findings(events: list[dict], pid: int, tid: int, findings: list[dict], ts: float) -> None:
    if not findings:
        return
    events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": "trainprof findings"}})
    for f in findings:
        events.append({"ph": "i", "s": "t", "name": f"{f['id']}: {f['title']}", "cat": "trainprof", "pid": pid,
                       "tid": tid, "ts": round(ts, 3),
                       "args": {"evidence": f["evidence"], "fix": f["fix"],
                                "estimated_gain_pct": f["estimated_gain_pct"]}})


def job_events(result: dict | Analysis, traces: dict[int, RankTracks]) -> list[dict]:
    """Perfetto JSON events for an analysis result (its record, or the analyser's dict) and
    the ranks' tracks (by rank: rank_tracks of each rank's trace)."""
    a = as_struct(result, Analysis)
    ranks = {r.rank: r for r in a.ranks}
    job = a.multi_rank.collectives if a.multi_rank else None
    offsets = {p.rank: p.clock_offset_us for p in job.per_rank} if job else {}
    blocks = {r: rec.collectives for r, rec in ranks.items() if rec.collectives}
    starts = [t.first_us - offsets.get(r, 0.0) for r, t in traces.items() if t.first_us is not None]
    t0 = min(starts) if starts else 0.0
    waits = _waits(blocks, offsets) if job and len(blocks) == len(ranks) else {}
    events: list[dict] = []
    named = mesh_ranks(a, sorted(traces))
    order = {r: i for i, r in enumerate(sorted(traces, key=lambda q: named[q][1]))}
    for r, t in sorted(traces.items()):
        shift = t0 + offsets.get(r, 0.0)  # original time − shift = time on the job's clock
        events.append({"ph": "M", "name": "process_name", "pid": r, "args": {"name": named[r][0]}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": r, "args": {"sort_index": order[r]}})
        evs, tid = track_events(t, r, shift)
        events += evs
        tid = _axis_track(events, r, tid, axis_slices(a, r), shift)
        tid = _added_track(events, r, tid, "collective waits", waits.get(r, []), t0, "trainprof.wait")
        rec = ranks.get(r)
        cp = rec.critical_path if rec else None
        segs = [(s.start_us, s.start_us + s.dur_us, f"{s.kind}: {s.name}")
                for st in (cp.steps if cp else []) for s in st.segments]
        tid = _added_track(events, r, tid, "critical path", segs, shift, "trainprof.critical_path")
        gaps = rec.idle_breakdown.intervals if rec and rec.idle_breakdown.intervals else None
        idle = [(s, s + d, f"GPU idle: {c}") for s, d, c in zip(gaps.start_us, gaps.dur_us, gaps.cause)] if gaps else []
        tid = _added_track(events, r, tid, "idle cause", idle, shift, "trainprof.idle")
        first = t.first_us - shift if t.first_us is not None else 0.0
        _findings(events, r, tid, msgspec.to_builtins(rec.findings or []) if rec else [], first)
    if a.multi_rank and a.multi_rank.findings:
        pid = max(traces) + 1 if traces else 0
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "job"}})
        _findings(events, pid, 1, msgspec.to_builtins(a.multi_rank.findings), 0.0)
    return events


def write_perfetto(path: Path, events: list[dict]) -> None:
    """gzip'd JSON (`.json.gz`) or plain JSON, written atomically."""
    from trainprof import atomic

    data = json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}, separators=(",", ":")).encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, compresslevel=5)
    atomic.write_bytes(path, data)
