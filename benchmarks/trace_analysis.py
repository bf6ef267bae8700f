"""Trace-analysis speed and peak memory: HTA vs `trainprof analyze`, side by side.

    python3 benchmarks/trace_analysis.py --hta-python /tmp/hta-venv/bin/python [--big] [--trials 3]
    python3 benchmarks/trace_analysis.py TRACE... --tools hta          # chosen traces, one tool

Default traces: the largest shared trace (hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz,
54 MB of JSON) and the next largest distinct one, plus synthetic traces of ~50 and ~200 MB (and
~1000 MB with --big) made from the largest by benchmarks/synth_trace.py into --synth-dir
(generated when missing).

Every measurement runs in a fresh wrapper process that starts the tool and reports the tool's
wall time (time.perf_counter around the subprocess) and peak RSS (the wrapper's
getrusage(RUSAGE_CHILDREN).ru_maxrss: the largest single descendant process, measured per
measurement because the wrapper has no other children). HTA is what a user runs:
TraceAnalysis(trace_dir=...) + temporal breakdown + GPU kernel breakdown + idle time breakdown,
under the HTA venv's python. trainprof is `python3 -m trainprof analyze TRACE --out TMPDIR`
(analysis.json, report.html with its charts, report.md: what a user gets) and, as "tp-json",
`python3 -m trainprof analyze TRACE --json` (stdout to a pipe, no files). HTA runs with
visualize=False, so it draws nothing.
The tools take turns within each trial (HTA, trainprof, tp-json, HTA, ...), so a change in
the machine's load reaches all of them alike. Median time and max RSS over --trials runs; a
timeout or failure stops that tool's trials.
trainprof's sources are byte-compiled first (`precompile`), as an installed wheel is.
Writes benchmarks/results/trace_analysis.json with an environment header.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import write_json

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "data" / "traces" / "real"
DDP = "hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz"
RESULTS = REPO / "benchmarks" / "results" / "trace_analysis.json"
BENCH_VERSION = 3  # 2: tools interleaved per trial; trainprof with its report; tp-json added. 3: trainprof byte-compiled first

# Runs in a fresh process per measurement: tool's wall time and peak RSS, as one JSON line.
WRAPPER = r"""
import json, os, resource, signal, subprocess, sys, time
timeout = float(sys.argv[1]); cmd = sys.argv[2:]
t0 = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
try:
    out, err = p.communicate(timeout=timeout)
    status = "ok" if p.returncode == 0 else "failed"
except subprocess.TimeoutExpired:
    os.killpg(p.pid, signal.SIGKILL)  # the tool's own process group, started just above
    out, err = p.communicate()
    status = "timeout"
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"status": status, "rc": p.returncode, "wall_s": wall, "maxrss_kb": ru.ru_maxrss,
                  "stdout_tail": out.decode(errors="replace")[-2000:],
                  "stderr_tail": err.decode(errors="replace")[-2000:]}))
"""

# What an HTA user runs on one trace (file symlinked alone into the folder argv[1]).
HTA_JOB = r"""
import json, sys
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
tb = ta.get_temporal_breakdown(visualize=False)
ta.get_gpu_kernel_breakdown(visualize=False)
ta.get_idle_time_breakdown(ranks=sorted(ta.t.traces), visualize=False)  # default ranks=[0] fails elsewhere
r = tb.iloc[0]
print("@@RESULT@@" + json.dumps({"span_us": float(r["kernel_time(us)"]), "idle_pct": float(r["idle_time_pctg"]),
      "compute_pct": float(r["compute_time_pctg"]), "non_compute_pct": float(r["non_compute_time_pctg"])}))
"""


def scan(path: Path) -> dict[str, Any]:
    """File size, uncompressed JSON size and event count (count of '"ph":' keys), streaming."""
    opener = gzip.open if path.name.endswith(".gz") else open
    n_bytes = n_events = 0
    tail = b""
    with opener(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            n_bytes += len(chunk)
            buf = tail + chunk
            n_events += buf.count(b'"ph":')
            tail = buf[-4:]  # a key split across chunks is counted once: 4 bytes cannot hold it whole
    return {"file_mb": round(path.stat().st_size / 1e6, 2), "json_mb": round(n_bytes / 1e6, 1), "events": n_events}


def measure(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    try:
        cp = subprocess.run([sys.executable, "-c", WRAPPER, str(timeout), *cmd],
                            capture_output=True, text=True, timeout=timeout + 120, env=env, cwd=REPO)
        return json.loads(cp.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 - a broken wrapper is a failed measurement
        return {"status": "failed", "rc": None, "wall_s": None, "maxrss_kb": 0, "stderr_tail": repr(e)}


def _error_line(m: dict[str, Any]) -> str:
    if m["status"] == "timeout":
        return "timeout"
    rc = m.get("rc")
    if rc is not None and rc < 0:
        return f"killed by signal {-rc}" + (" (likely out of memory)" if rc == -9 else "")
    lines = [ln.strip() for ln in (m.get("stderr_tail") or "").splitlines() if ln.strip()]
    if not lines:
        return f"exit code {rc}"
    # a bare exception name ("ValueError") says little: add the line of code that raised it
    return (lines[-1] if ":" in lines[-1] or len(lines) < 2 else f"{lines[-1]} at {lines[-2]}")[:300]


def run_interleaved(tools: dict[str, tuple[list[str], Any, dict[str, str] | None]], trials: int,
                    timeout: float) -> dict[str, dict[str, Any]]:
    """tools: name -> (command, read_result, env). Each trial runs every tool once, in turn."""
    times: dict[str, list[float]] = {n: [] for n in tools}
    rss: dict[str, list[float]] = {n: [] for n in tools}
    out: dict[str, dict[str, Any]] = {}
    for i in range(trials):
        for name, (cmd, read_result, env) in tools.items():
            if name in out:  # failed earlier: no more trials for it
                continue
            m = measure(cmd, timeout, env)
            if m["status"] != "ok":
                out[name] = {"status": m["status"], "error": _error_line(m), "trials_done": i,
                             "times_s": [round(t, 3) for t in times[name]]}
                continue
            times[name].append(m["wall_s"])
            rss[name].append(m["maxrss_kb"] / 1024)
            result = read_result(m)
            if i == trials - 1:
                out[name] = {"status": "ok", "median_s": round(statistics.median(times[name]), 3),
                             "max_rss_mb": round(max(rss[name]), 1), "times_s": [round(t, 3) for t in times[name]],
                             "rss_mb": [round(r, 1) for r in rss[name]], "result": result}
            print(f"    {name} trial {i + 1}: {m['wall_s']:.2f} s, {m['maxrss_kb'] / 1024:.0f} MB", flush=True)
    return out


def _hta_result(m: dict[str, Any]) -> Any:
    line = next((ln for ln in m["stdout_tail"].splitlines() if ln.startswith("@@RESULT@@")), None)
    return json.loads(line[len("@@RESULT@@"):]) if line else None


def trainprof_available(py: str) -> bool:
    try:
        cp = subprocess.run([py, "-m", "trainprof", "analyze", "--help"], capture_output=True, text=True,
                            timeout=120, cwd=REPO, env=_tp_env())
        return cp.returncode == 0
    except Exception:  # noqa: BLE001
        return False


def _tp_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def trainprof_tools(trace: Path, py: str, out: Path) -> dict[str, tuple[list[str], Any, dict[str, str]]]:
    def read(_m: dict[str, Any]) -> Any:
        try:
            tb = json.loads((out / "analysis.json").read_text())["ranks"][0]["temporal_breakdown"]
            return {k: tb.get(k) for k in ("span_us", "idle_pct", "compute_pct", "communication_pct", "memcpy_pct")}
        except Exception:  # noqa: BLE001 - result shape is trainprof's business
            return None

    def read_json(m: dict[str, Any]) -> Any:
        return {"stdout_tail_bytes": len(m.get("stdout_tail") or "")}

    return {"trainprof": ([py, "-m", "trainprof", "analyze", str(trace), "--out", str(out), "--force"], read, _tp_env()),
            "tp-json": ([py, "-m", "trainprof", "analyze", str(trace), "--json"], read_json, _tp_env())}


def hta_tool(trace: Path, hta_py: str, tmp: Path) -> dict[str, tuple[list[str], Any, None]]:
    (tmp / trace.name).symlink_to(trace.resolve())
    return {"hta": ([hta_py, "-c", HTA_JOB, str(tmp)], _hta_result, None)}


def ensure_synth(src: Path, target_mb: int, synth_dir: Path) -> Path:
    out = synth_dir / f"synth_{src.name.split('.')[0]}_{target_mb}mb.json"
    if not out.exists():
        print(f"generating {out} (~{target_mb} MB) ...", flush=True)
        t0 = time.perf_counter()
        tmp = out.with_suffix(".partial")
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "synth_trace.py"), str(src), str(tmp),
                        "--target-mb", str(target_mb)], check=True)
        tmp.rename(out)
        print(f"  generated in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def default_traces(args: argparse.Namespace) -> list[tuple[Path, bool]]:
    root = Path(args.traces_dir)
    files = sorted((p for p in root.rglob("*.json*") if p.is_file()), key=lambda p: p.stat().st_size, reverse=True)
    ddp = root / DDP
    real = [ddp] if ddp.exists() else []
    real += [p for p in files if p != ddp][: 2 - len(real)]  # the largest other than the DDP trace
    out: list[tuple[Path, bool]] = [(p, False) for p in real]
    src = Path(args.synth_source) if args.synth_source else (ddp if ddp.exists() else (files[0] if files else None))
    if src is not None and not args.no_synth:
        for mb in [50, 200] + ([1000] if args.big else []):
            out.append((ensure_synth(src, mb, Path(args.synth_dir)), True))
    return out


def environment(hta_py: str | None) -> dict[str, Any]:
    cpu = platform.processor()
    if Path("/proc/cpuinfo").exists():
        models = [ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                  if ln.startswith("model name")]
        cpu = models[0] if models else cpu
    mem_gb = None
    if Path("/proc/meminfo").exists():
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem_gb = round(kb / 2**20, 1)
    env: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "benchmark_version": BENCH_VERSION, "python": platform.python_version(), "platform": platform.platform(),
        "cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb,
    }
    if hta_py:
        try:
            cp = subprocess.run([hta_py, "-c", "import importlib.metadata as m, platform; print(m.version("
                                 "'HolisticTraceAnalysis'), m.version('pandas'), platform.python_version())"],
                                capture_output=True, text=True, timeout=120)
            env["hta"], env["hta_pandas"], env["hta_python"] = cp.stdout.split()
        except Exception:  # noqa: BLE001
            env["hta"] = "unavailable"
    return env


def _fmt(r: dict[str, Any] | None, key: str, spec: str) -> str:
    if not r:
        return "-"
    if r.get("status") != "ok":
        return {"not available": "n/a"}.get(r.get("status", "-"), r.get("status", "-"))
    return format(r[key], spec)


def precompile() -> None:
    """Byte-compile trainprof's sources once, as `pip install` does for a wheel and as HTA's
    venv already is: with PYTHONDONTWRITEBYTECODE set (this sandbox sets it) an editable
    install would otherwise compile ~100 modules in every timed run (~0.1 s idle), a cost no
    installed user pays and that HTA's pandas/numpy .pyc files never show."""
    import trainprof

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(trainprof.__file__).parent)], check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", help="trace files (default: see module docstring)")
    ap.add_argument("--hta-python", default="/tmp/hta-venv/bin/python", help="python of a venv with HTA")
    ap.add_argument("--tools", default="hta,trainprof", help="comma list of hta, trainprof")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per single run")
    ap.add_argument("--big", action="store_true", help="also the ~1000 MB synthetic trace")
    ap.add_argument("--no-synth", action="store_true", help="real traces only")
    ap.add_argument("--traces-dir", default=str(REAL), help="folder of real traces (default: the shipped ones)")
    ap.add_argument("--synth-source", help="trace to replicate (default: the DDP trace)")
    ap.add_argument("--synth-dir", default=os.path.join(tempfile.gettempdir(), "trainprof-synth"))
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    tools = {t.strip() for t in args.tools.split(",") if t.strip()}

    traces = [(Path(t), False) for t in args.traces] if args.traces else default_traces(args)
    hta_py = args.hta_python if "hta" in tools else None
    if hta_py and not Path(hta_py).exists():
        print(f"HTA python {hta_py} not found: HTA column skipped", file=sys.stderr)
        hta_py = None
    if "trainprof" in tools:
        precompile()
    tp_ok = "trainprof" in tools and trainprof_available(sys.executable)
    if "trainprof" in tools and not tp_ok:
        print("trainprof analyze not available")

    rows = []
    for path, synthetic in traces:
        info = scan(path)
        print(f"{path} ({info['json_mb']} MB JSON, {info['events']} events)", flush=True)
        row: dict[str, Any] = {"trace": str(path), "synthetic": synthetic, **info}
        tmp = Path(tempfile.mkdtemp(prefix="tp-bench-"))
        try:
            runs: dict[str, Any] = {}
            if hta_py:
                (tmp / "hta").mkdir()
                runs.update(hta_tool(path, hta_py, tmp / "hta"))
            if tp_ok:
                runs.update(trainprof_tools(path, sys.executable, tmp / "tp"))
            row.update(run_interleaved(runs, args.trials, args.timeout))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if "trainprof" in tools and not tp_ok:
            row["trainprof"] = {"status": "not available", "error": "trainprof analyze not available"}
        h, t, j = row.get("hta") or {}, row.get("trainprof") or {}, row.get("tp-json") or {}
        if h.get("status") == "ok" and t.get("status") == "ok":
            row["time_ratio"] = round(t["median_s"] / h["median_s"], 4)
            row["rss_ratio"] = round(t["max_rss_mb"] / h["max_rss_mb"], 4)
        if h.get("status") == "ok" and j.get("status") == "ok":
            row["json_time_ratio"] = round(j["median_s"] / h["median_s"], 4)
        rows.append(row)

    cols = ("JSON MB", "events", "HTA s", "HTA MB", "tp s", "tp MB", "json s", "t ratio", "j ratio", "m ratio")
    head = f"{'trace':<44} {cols[0]:>8} {cols[1]:>9} " + " ".join(f"{c:>8}" for c in cols[2:])
    print("\n" + head + "\n" + "-" * len(head))
    for r in rows:
        name = Path(r["trace"]).name[:44]
        print(f"{name:<44} {r['json_mb']:>8} {r['events']:>9} {_fmt(r.get('hta'), 'median_s', '.2f'):>8} "
              f"{_fmt(r.get('hta'), 'max_rss_mb', '.0f'):>8} {_fmt(r.get('trainprof'), 'median_s', '.2f'):>8} "
              f"{_fmt(r.get('trainprof'), 'max_rss_mb', '.0f'):>8} {_fmt(r.get('tp-json'), 'median_s', '.2f'):>8} "
              f"{r.get('time_ratio', '-'):>8} {r.get('json_time_ratio', '-'):>8} {r.get('rss_ratio', '-'):>8}")
    if "trainprof" in tools and not tp_ok:
        print("trainprof analyze not available")

    payload = {"benchmark": "trace_analysis", "env": {**environment(hta_py), "trials": args.trials,
               "timeout_s": args.timeout, "rss": "peak RSS of the largest single process (ru_maxrss)"},
               "traces": rows}
    write_json(args.out, payload)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
