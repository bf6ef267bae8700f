"""Make a bigger, valid Kineto trace by replicating a real one, for scaling benchmarks.

    python benchmarks/synth_trace.py SRC.json[.gz] OUT.json[.gz] --target-mb 1000
    python benchmarks/synth_trace.py SRC OUT --copies 4

Copy k of the source's events is shifted in time by k * D, where D is the source's event span
rounded up to whole microseconds (+1 us), so copies follow one another and an integer-ts trace
stays integer (a float shift would switch on HTA's ns rounding). In copy k every link id
(args correlation / External id / Python id / ..., flow event ids) is offset by k * M, M = 1 + the
largest such id in the source, so correlations and flows stay unique and still pair up; and
ProfilerStep#N becomes ProfilerStep#(N + k * S), S = the number of step numbers in the source, so
steps are numbered on. Metadata events (ph 'M') and the profiler's whole-trace span (cat 'Trace',
stretched to cover all copies) are written once.

The output keeps only these top-level keys of the source: deviceProperties, distributedInfo,
displayTimeUnit, baseTimeNanoseconds, schemaVersion (and traceEvents). Everything else (host
names, environment blocks that may hold tokens, ...) is dropped. It is written streaming, one
event per line, metadata before traceEvents and distributedInfo on a line of its own (HTA finds
the rank with a line-by-line regex). ``--target-mb`` counts 10**6 bytes of uncompressed JSON;
the number of copies is the nearest whole number (at least 1), so sizes are multiples of one copy.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import IO, Any, Iterable

KEEP_TOP = ("schemaVersion", "deviceProperties", "distributedInfo", "displayTimeUnit", "baseTimeNanoseconds")
# args that name another event; offset together so equal ids stay equal (flow id == correlation)
LINK_ARGS = (
    "correlation", "External id", "external id", "Python id", "Python parent id", "Ev Idx",
    "Record function id", "Sequence number", "wait_on_cuda_event_record_corr_id",
)
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
BATCH = 20_000  # events serialised per write


def _load(path: str) -> dict[str, Any]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return json.loads(fh.read())


def _is_id(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def plan(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Shift, id offset and step count for one source."""
    lo, hi, max_id, steps = math.inf, -math.inf, 0, set()
    for e in events:
        if e.get("ph") == "M" or e.get("cat") == "Trace":
            continue
        ts = e.get("ts")
        if isinstance(ts, (int, float)):
            lo = min(lo, ts)
            hi = max(hi, ts + (e.get("dur") or 0))
        if _is_id(e.get("id")):
            max_id = max(max_id, e["id"])
        a = e.get("args")
        if isinstance(a, dict):
            for k in LINK_ARGS:
                v = a.get(k)
                if _is_id(v):
                    max_id = max(max_id, v)
        m = STEP_RE.match(str(e.get("name", "")))
        if m:
            steps.add(int(m.group(1)))
    if lo is math.inf:
        raise ValueError("source has no timed events")
    n_steps = (max(steps) - min(steps) + 1) if steps else 0
    return {"shift_us": int(math.ceil(hi - lo)) + 1, "id_offset": max_id + 1, "n_steps": n_steps}


def shifted(e: dict[str, Any], k: int, p: dict[str, Any]) -> dict[str, Any]:
    """Copy k of event e (k >= 1)."""
    e = dict(e)
    if isinstance(e.get("ts"), (int, float)):
        e["ts"] = e["ts"] + k * p["shift_us"]
    off = k * p["id_offset"]
    if _is_id(e.get("id")):
        e["id"] += off
    a = e.get("args")
    if isinstance(a, dict):
        hits = [key for key in LINK_ARGS if _is_id(a.get(key))]
        if hits:
            a = dict(a)
            for key in hits:
                a[key] += off
            e["args"] = a
    if p["n_steps"]:
        m = STEP_RE.match(str(e.get("name", "")))
        if m:
            e["name"] = f"ProfilerStep#{int(m.group(1)) + k * p['n_steps']}"
    return e


def _write_events(fh: IO[str], events: Iterable[dict[str, Any]], first: bool) -> tuple[int, bool]:
    """Writes events one per line; returns (bytes written, still-first flag)."""
    n, batch = 0, []
    dumps = json.dumps
    for e in events:
        batch.append(dumps(e))
        if len(batch) >= BATCH:
            s = ("" if first else ",\n") + ",\n".join(batch)
            fh.write(s)
            n += len(s.encode()) if not s.isascii() else len(s)
            first, batch = False, []
    if batch:
        s = ("" if first else ",\n") + ",\n".join(batch)
        fh.write(s)
        n += len(s.encode()) if not s.isascii() else len(s)
        first = False
    return n, first


def synthesize(src: str, out: str, target_mb: float | None = None, copies: int | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    trace = _load(src)
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        raise ValueError(f"{src}: no traceEvents list")
    once = [e for e in events if isinstance(e, dict) and (e.get("ph") == "M" or e.get("cat") == "Trace")]
    body = [e for e in events if isinstance(e, dict) and not (e.get("ph") == "M" or e.get("cat") == "Trace")]
    del events
    p = plan(body)

    opener = (lambda f: gzip.open(f, "wt", compresslevel=1, encoding="utf-8")) if out.endswith(".gz") else (
        lambda f: open(f, "w", encoding="utf-8"))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with opener(out) as fh:
        head = "{" + ",\n".join(f"{json.dumps(k)}: {json.dumps(trace[k])}" for k in KEEP_TOP if k in trace)
        head += (",\n" if head != "{" else "") + '"traceEvents": [\n'
        fh.write(head)
        written = len(head.encode())
        n0, first = _write_events(fh, body, True)  # copy 0 is the source itself
        written += n0
        if copies is None:
            copies = max(1, round(target_mb * 1e6 / max(written, 1))) if target_mb else 1
        for k in range(1, copies):
            nk, first = _write_events(fh, (shifted(e, k, p) for e in body), first)
            written += nk
        tail_events = []
        for e in once:
            if e.get("cat") == "Trace" and isinstance(e.get("dur"), (int, float)):
                e = dict(e, dur=e["dur"] + (copies - 1) * p["shift_us"])
            tail_events.append(e)
        nt, first = _write_events(fh, tail_events, first)
        fh.write("\n]}\n")
        written += nt + 4
    return {
        "src": src, "out": out, "copies": copies, "events": copies * len(body) + len(once),
        "bytes": written, "mb": round(written / 1e6, 1), "seconds": round(time.perf_counter() - t0, 2), **p,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("out")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--target-mb", type=float, help="uncompressed size to reach (10**6 bytes)")
    g.add_argument("--copies", type=int, help="number of copies of the source (>= 1)")
    args = ap.parse_args(argv)
    if args.copies is not None and args.copies < 1:
        ap.error("--copies must be >= 1")
    info = synthesize(args.src, args.out, args.target_mb, args.copies)
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
