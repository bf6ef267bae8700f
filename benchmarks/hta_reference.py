"""Reference numbers from Meta's HolisticTraceAnalysis (HTA) for every shared trace.

Run it with the python of a venv that has HTA (a benchmark-only dependency, never imported by
trainprof):

    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis
    /tmp/hta-venv/bin/python benchmarks/hta_reference.py [TRACES_DIR] [--out FILE]

TRACES_DIR defaults to tests/data/traces/real. Each trace file is analysed
alone (HTA's ``TraceAnalysis(trace_dir=...)`` wants a folder, so the file is symlinked into a temp
folder) in a fresh subprocess: HTA mutates its global parser config while parsing, and a crash or
a hang on one trace must not touch the others. Every exception is caught per trace and recorded
as "Type: first line of message".

Output (default tests/data/hta_reference.json) is small: per trace the temporal breakdown, the
comm/compute overlap, the idle-time breakdown per stream and a few diagnostics that say which
events HTA kept. ``NOTES`` below records, with file:function citations into HTA 0.5.0, exactly
what HTA computes; trainprof's temporal breakdown follows it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = REPO / "tests" / "data" / "traces" / "real"
DEFAULT_OUT = REPO / "tests" / "data" / "hta_reference.json"

# What HTA 0.5.0 does, read from its source (paths relative to site-packages/hta/).
NOTES: dict[str, str] = {
    "units": (
        "All times are in the trace's timestamp unit, i.e. microseconds (Chrome-trace 'ts'/'dur'), "
        "for every trace, including displayTimeUnit='ns' ones: HTA never reads displayTimeUnit. "
        "The docstring of trace_analysis.py:TraceAnalysis.get_temporal_breakdown says 'nanoseconds' "
        "but the returned columns are named '(us)' and hold raw ts/dur differences, so the keys "
        "below are *_us. idle_time_breakdown's consecutive_kernel_delay=30 is likewise 30 us, "
        "not the 30 ns its docstring claims."
    ),
    "parsing": (
        "common/trace_parser.py:parse_trace_dict: default backend is ParserBackend.JSON "
        "(json.loads of the whole decompressed file; get_default_trace_parsing_backend). "
        "_compress_df drops every event whose 'dur' or 'cat' is missing (so 'i' instant events, "
        "flow 's'/'f' events without dur, 'M' metadata events, counters) and every cat=='Trace' "
        "event. Args kept: stream (default -1), correlation (default -1), External id, etc. "
        "(configs/default_event_args.py). utils/utils.py:normalize_gpu_stream_numbers: a stream "
        "that int() cannot convert becomes -1."
    ),
    "ns_rounding": (
        "common/trace_parser.py:round_down_time_stamps: if the 'ts' column is float64 (any event "
        "has a fractional-us ts, as in traces from PyTorch >= 2.3 and every displayTimeUnit='ns' "
        "trace), then for ALL events ts := ceil(ts), end := floor(ts + dur), dur := end - ts "
        "(can be negative for sub-microsecond kernels). Disabled only by env "
        "HTA_DISABLE_NS_ROUNDING=1. Integer-ts traces are untouched."
    ),
    "rank": (
        "common/trace_file.py:create_rank_to_trace_dict: rank = first match of the regex "
        "'\"rank\":\\s+(\\d+)' scanning the file line by line (so usually distributedInfo.rank); "
        "no match -> rank 0."
    ),
    "step_filter": (
        "common/trace.py:Trace._filter_irrelevant_gpu_kernels (called by load_traces with "
        "include_last_profiler_step=False, the TraceAnalysis default): profiler_steps = the "
        "distinct event NAMES containing 'ProfilerStep' (any cat, incl. a gpu_user_annotation "
        "named ProfilerStep#N). If there are 0 or 1 such names NOTHING is filtered (all events "
        "kept, warning only). If >= 2: cpu = CPUOperatorFilter (every event that is not a GPU "
        "kernel, see gpu_events) with ts < max(ts of the ProfilerStep events) -- i.e. the LAST "
        "ProfilerStep and everything that starts at/after its start is dropped, while everything "
        "before the first step is KEPT; gpu = GPU events whose 'correlation' equals the "
        "correlation of a kept CPU event (inner merge; in practice the cuda_runtime/cuda_driver "
        "launch). So a GPU kernel is kept iff its launch (runtime event) starts before the last "
        "ProfilerStep starts, even if the kernel itself runs later; GPU events whose launch is "
        "absent from the trace are dropped. The trace is then these cpu + gpu rows only."
    ),
    "gpu_events": (
        "common/trace_filter.py:_filter_gpu_kernels_with_cuda_sync: a GPU kernel is an event with "
        "stream >= 0 and correlation >= 0, or named 'Event Sync'/'Context Sync'. The analyses "
        "themselves (breakdown_analysis.py:BreakdownAnalysis.get_temporal_breakdown."
        "idle_time_per_rank, communication_analysis.py:CommunicationAnalysis.get_comm_comp_overlap, "
        "get_gpu_kernel_breakdown) take trace_df[stream != -1]: every event carrying args.stream "
        ">= 0 (or any stream other than -1), regardless of cat: kernel, gpu_memcpy, gpu_memset AND "
        "cuda_sync 'Stream Sync' events (stream=N); NOT gpu_user_annotation (Kineto gives it no "
        "stream arg -> -1), NOT 'Event Sync'/'Context Sync' (stream -1), NOT ac2g flows (no dur)."
    ),
    "kernel_classes": (
        "utils/utils.py:get_kernel_type, first match wins, all re.match (anchored at start): "
        "COMMUNICATION if r'^nccl.*Kernel' (ncclKernel_*, ncclDevKernel_* incl. RCCL; gloo has "
        "no GPU kernels and no 'gloo' pattern exists in HTA); MEMORY if "
        "r'(^Memcpy)|(^Memset)|(^dma)' (gpu_memcpy/gpu_memset names 'Memcpy HtoD (...)', "
        "'Memset (Device)'); COMPUTATION if NOT r'(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)' "
        "-- note the grouping: that is '.*Memcpy' anywhere, 'Memset' at start, or 'Sync' anywhere; "
        "else OTHER (e.g. cuda_sync 'Stream Sync', a kernel whose name contains 'Memcpy' or "
        "'Sync' not at the start). There is no separate 'gloo:' rule anywhere in HTA 0.5.0."
    ),
    "span": (
        "breakdown_analysis.py:BreakdownAnalysis._get_idle_time_for_kernels: kernel_time (the "
        "span) = end of the last merged interval - start of the first, over all stream != -1 "
        "events left after step_filter (union over streams via utils/utils.py:"
        "merge_kernel_intervals: sort by ts, end = ts + dur, a new group starts when ts > running "
        "max of previous ends; touching intervals merge). idle = span - sum(merged lengths)."
    ),
    "temporal_breakdown": (
        "breakdown_analysis.py:get_temporal_breakdown: compute_time = union length of "
        "COMPUTATION events only; non_compute_time = span - compute - idle (= time covered only "
        "by COMMUNICATION/MEMORY/OTHER events, with no compute running); pct = round(100*x/span, 2)."
    ),
    "comm_comp_overlap": (
        "communication_analysis.py:get_comm_comp_overlap: union(COMMUNICATION) and "
        "union(COMPUTATION) intervals; overlap_pct = round(100 * |comm AND comp| / |comm|, 2); "
        "NaN (stored as null) when there is no communication kernel."
    ),
    "idle_time_breakdown": (
        "breakdown_analysis.py:get_idle_time_breakdown (rank 0 only by default, per stream): "
        "events with stream != -1 and cat in kernel/Kernel/gpu_memset/Memset/gpu_memcpy/Memcpy/"
        "mtia_ccp_events (so no cuda_sync). For each stream sorted by ts, gap = ts - previous "
        "end; host_wait if the launching runtime event (index_correlation) started after the "
        "previous kernel ended; else kernel_wait if gap < 30 (us); else other. Negative gaps "
        "(overlap) are summed too. Values are us per stream."
    ),
    "kernel_type_breakdown": (
        "breakdown_analysis.py:BreakdownAnalysis._get_gpu_kernel_type_time via "
        "get_gpu_kernel_breakdown(include_memory_kernels=True): union time per class "
        "(COMPUTATION, COMMUNICATION, MEMORY; overlapping spans reported as 'A overlapping B'); "
        "OTHER events are ignored there; percentage is of the sum of those classes, not of span."
    ),
    "failures": (
        "HTA 0.5.0 + pandas 3 fails on 4 shared traces. (1) CPU-only trace (no stream != -1 "
        "event): IndexError in breakdown_analysis.py:_get_idle_time_for_kernels "
        "(merged_kernels.iloc[-1] on an empty frame). (2) H100 Qwen: AssertionError "
        "'non_compute_time >= 0' in get_temporal_breakdown.idle_time_per_rank: ns rounding turns "
        "22 sub-us kernels into negative-length intervals and the union sums stop being "
        "consistent; with HTA_DISABLE_NS_ROUNDING=1 it succeeds (see no_ns_rounding). (3,4) MI300 "
        "resnet_act_checkpoint and torch_compile_triton: TypeError in common/trace.py:"
        "transform_correlation_to_index: _compress_df downcasts the correlation column to "
        "int8/int16, index_correlation inherits that dtype, and assigning event indices that do "
        "not fit raises under pandas >= 3 (pandas 2.x only warned and upcast). 'fallback' holds "
        "the same HTA 0.5.0 under pandas 2.x for failed traces, where given."
    ),
    "rounding_impact": (
        "ns_rounding moves HTA's idle_pct by up to 3.2 points on the shared traces (MI300 Qwen "
        "11.76 rounded vs 8.54 exact; H100 BERT 93.50 vs 92.08; the ns-timeunit ResNet 2.63 vs "
        "1.68; A100 nccl_data 77.78 vs 77.23), so a 1-point cross-check must either apply the "
        "same ceil(ts)/floor(end) on float-ts traces or compare with no_ns_rounding."
    ),
    "fields": (
        "ok: temporal breakdown succeeded. *_us: HTA's values (us). *_pct: HTA's own rounded "
        "percentages of kernel_time_us (the span). last_step_dropped: step_filter applied "
        "(>= 2 ProfilerStep names). gpu_events_used / gpu_events_by_class / streams / "
        "span_start_ts_us / span_end_ts_us: the stream != -1 events the breakdown saw (span "
        "bounds in original trace time after rounding). ts_rounded: ns_rounding applied. "
        "no_ns_rounding: HTA rerun with HTA_DISABLE_NS_ROUNDING=1 (exact timestamps). fallback: "
        "rerun of a failed trace under another HTA venv (--fallback-python)."
    ),
}


def _clean(x: Any) -> Any:
    """Make numpy/pandas scalars JSON-safe; NaN -> None."""
    if hasattr(x, "item"):
        x = x.item()
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, float):
        return round(x, 4)
    return x


def _err(e: BaseException) -> str:
    """'Type: first line of message [at hta/file.py:line function]' (innermost HTA frame)."""
    import traceback

    msg = str(e).strip().splitlines()
    out = f"{type(e).__name__}: {msg[0] if msg else ''}".strip()
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f"{os.sep}hta{os.sep}" in f.filename]
    if frames:
        f = frames[-1]
        rel = f.filename[f.filename.rindex(f"{os.sep}hta{os.sep}") + 1:]
        out += f" [at {rel}:{f.lineno} {f.name}: {(f.line or '').strip()}]"
    return out


def analyse_one(path: str) -> dict[str, Any]:
    """Runs HTA on one trace file; never raises."""
    import logging

    logging.disable(logging.WARNING)  # HTA logs a warning per parse step
    out: dict[str, Any] = {}
    try:
        from hta.trace_analysis import TraceAnalysis
        from hta.utils.utils import get_kernel_type

        with tempfile.TemporaryDirectory(prefix="hta-ref-") as tmp:
            os.symlink(os.path.abspath(path), os.path.join(tmp, os.path.basename(path)))
            ta = TraceAnalysis(trace_dir=tmp)
    except BaseException as e:  # noqa: BLE001 - recorded, not swallowed
        return {"ok": False, "error": _err(e), "stage": "load"}

    t = ta.t
    rank = sorted(t.traces)[0]
    out["rank"] = int(rank)
    sym = t.symbol_table.get_sym_table()
    step_names = sorted(s for s in sym if "ProfilerStep" in s)
    out["profiler_step_names"] = len(step_names)
    out["last_step_dropped"] = len(step_names) >= 2

    try:
        tb = ta.get_temporal_breakdown(visualize=False)
        row = tb[tb["rank"] == rank].iloc[0]
        out.update(
            {
                "ok": True,
                "idle_time_us": _clean(row["idle_time(us)"]),
                "compute_time_us": _clean(row["compute_time(us)"]),
                "non_compute_time_us": _clean(row["non_compute_time(us)"]),
                "kernel_time_us": _clean(row["kernel_time(us)"]),
                "idle_pct": _clean(row["idle_time_pctg"]),
                "compute_pct": _clean(row["compute_time_pctg"]),
                "non_compute_pct": _clean(row["non_compute_time_pctg"]),
            }
        )
    except BaseException as e:  # noqa: BLE001
        out.update({"ok": False, "error": _err(e), "stage": "temporal_breakdown"})

    try:
        ov = ta.get_comm_comp_overlap(visualize=False)
        out["comm_comp_overlap_pct"] = _clean(ov[ov["rank"] == rank].iloc[0]["comp_comm_overlap_pctg"])
    except BaseException as e:  # noqa: BLE001
        out["comm_comp_overlap_error"] = _err(e)

    try:
        idle_df, _ = ta.get_idle_time_breakdown(ranks=[rank], visualize=False)
        per_stream: dict[str, dict[str, Any]] = {}
        for r in idle_df.itertuples(index=False):
            per_stream.setdefault(str(_clean(r.stream)), {})[str(r.idle_category)] = _clean(r.idle_time)
        out["idle_breakdown_us"] = per_stream
    except BaseException as e:  # noqa: BLE001
        out["idle_breakdown_error"] = _err(e)

    try:
        kt, _ = ta.get_gpu_kernel_breakdown(visualize=False)
        out["kernel_type_breakdown_us"] = {str(r.kernel_type): _clean(r.sum) for r in kt.itertuples(index=False)}
    except BaseException as e:  # noqa: BLE001
        out["kernel_type_breakdown_error"] = _err(e)

    # Diagnostics: exactly which GPU events the temporal breakdown saw.
    try:
        df = t.traces[rank]
        gpu = df[df["stream"].ne(-1)]
        counts: dict[str, int] = {}
        for name_id, n in gpu["name"].value_counts().items():
            k = get_kernel_type(sym[name_id])
            counts[k] = counts.get(k, 0) + int(n)
        out["gpu_events_used"] = int(len(gpu))
        out["gpu_events_by_class"] = counts
        out["streams"] = sorted(int(s) for s in gpu["stream"].unique())
        if len(gpu):
            # absolute trace-time window of the span (ts was shifted by min_ts, and rounded if float)
            out["span_start_ts_us"] = _clean(float(gpu["ts"].min() + t.min_ts))
            out["span_end_ts_us"] = _clean(float((gpu["ts"] + gpu["dur"]).max() + t.min_ts))
    except BaseException as e:  # noqa: BLE001
        out["diagnostics_error"] = _err(e)
    return out


def _ts_is_float(path: Path) -> bool:
    """Whether HTA's ns rounding applied: any event with a fractional ts (same rule as pandas' float64)."""
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        events = json.loads(fh.read()).get("traceEvents", [])
    return any(isinstance(e.get("ts"), float) for e in events if isinstance(e, dict))


COMPACT = (
    "ok", "error", "stage", "rank", "last_step_dropped", "kernel_time_us", "idle_time_us", "compute_time_us",
    "non_compute_time_us", "idle_pct", "compute_pct", "non_compute_pct", "comm_comp_overlap_pct",
)


def _run_worker(python: str, path: Path, timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """analyse_one(path) in a fresh process of `python`."""
    try:
        cp = subprocess.run(
            [python, __file__, "--one", str(path)], capture_output=True, text=True, timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout:.0f} s"}
    line = next((ln for ln in cp.stdout.splitlines() if ln.startswith("@@RESULT@@")), None)
    if line is None:
        tail = (cp.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "error": f"worker exited {cp.returncode}: {tail}"}
    return json.loads(line[len("@@RESULT@@"):])


def _versions(python: str) -> dict[str, str]:
    code = "import importlib.metadata as m; print(m.version('HolisticTraceAnalysis'), m.version('pandas'))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.split()
    return {"hta_version": out[0], "pandas_version": out[1]} if len(out) == 2 else {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="?", default=str(DEFAULT_TRACES), help="folder of trace files")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--timeout", type=float, default=900, help="seconds per trace")
    ap.add_argument("--fallback-python", help="python of a second HTA venv (e.g. pandas<3) to retry failed traces")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # worker mode: one file -> JSON on stdout
    args = ap.parse_args(argv)

    if args.one:
        print("@@RESULT@@" + json.dumps(analyse_one(args.one)))
        return 0

    import importlib.metadata as md

    try:
        md.version("HolisticTraceAnalysis")
    except md.PackageNotFoundError:
        print(f"HTA is not installed for {sys.executable}: run this with the HTA venv's python", file=sys.stderr)
        return 2
    root = Path(args.traces)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz")))
    fallback_versions = _versions(args.fallback_python) if args.fallback_python else None
    traces: dict[str, Any] = {}
    for p in files:
        rel = p.relative_to(root).as_posix()
        t0 = time.perf_counter()
        res = _run_worker(sys.executable, p, args.timeout)
        try:
            res["ts_rounded"] = _ts_is_float(p)
        except Exception:  # noqa: BLE001 - unreadable file: HTA's error says why
            pass
        wall_s = round(time.perf_counter() - t0, 2)
        if res.get("ts_rounded"):
            # what HTA would say on exact timestamps (env switch in hta/configs/env_options.py)
            alt = _run_worker(sys.executable, p, args.timeout, {"HTA_DISABLE_NS_ROUNDING": "1"})
            res["no_ns_rounding"] = {k: alt[k] for k in COMPACT if k in alt}
        if not res.get("ok") and args.fallback_python:
            alt = _run_worker(args.fallback_python, p, args.timeout)
            res["fallback"] = {**{k: alt[k] for k in COMPACT if k in alt}, **(fallback_versions or {})}
        traces[rel] = res
        status = "ok" if res.get("ok") else f"FAILED {res.get('error')}"
        if "fallback" in res:
            status += " | fallback " + ("ok" if res["fallback"].get("ok") else f"FAILED {res['fallback'].get('error')}")
        print(f"{rel}: {status} ({wall_s} s)", flush=True)

    payload = {
        "generator": "benchmarks/hta_reference.py",
        "hta_version": md.version("HolisticTraceAnalysis"),
        "pandas_version": md.version("pandas"),
        "numpy_version": md.version("numpy"),
        "python": sys.version.split()[0],
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "traces_root": "tests/data/traces/real",
        "notes": NOTES,
        "traces": traces,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    print(f"wrote {args.out}: {sum(r.get('ok', False) for r in traces.values())}/{len(traces)} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
