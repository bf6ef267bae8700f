"""Terminal tables of a bench.json record (rendering only: every number is in the record;
its shape is recordtypes/bench.py)."""

from __future__ import annotations

from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from trainprof.report.console import escape
from trainprof.report.fit import FitTable

from trainprof.bench.parse import human_bytes
from trainprof.recordtypes.bench import (Bench, BandwidthBench, BatchBench, CollectivesBench, DataloaderBench,
                                         MatmulBench, ScalingBench, ShapesBench)

OTHERS_WARN_SHARE = 0.10  # other processes' share of all cores' time above which we warn


def _num(x: float) -> str:
    """3 decimals, or 2 significant digits below 0.01 (a 2-core CPU's fp16 is ~0.001 TFLOP/s)."""
    return f"{x:.3f}" if x >= 0.01 or x == 0 else f"{x:.2g}"


def _table(title: str, cols: list[str], left: int = 1) -> Table:
    t = FitTable(title=title, title_justify="left")
    for i, c in enumerate(cols):
        t.add_column(c, justify="left" if i < left else "right", no_wrap=True)
    return t


def _env_line(rec: Bench) -> str:
    e = rec.env
    return (f"[dim]{escape(e.device.strip())} \\[{e.device_kind}], torch {e.torch}, {e.threads} threads, "
            f"{e.date}, {rec.kind} v{e.benchmark_version}[/]")


def _matmul(rec: MatmulBench, con: Console) -> None:
    t = _table(escape("Matmul TFLOP/s per shape (C[M,N] = A[M,K]·B[K,N], 2·M·N·K FLOPs)"),
               ["dtype", "op", "shape (MxNxK)", "iters", "median ms", "mean", "median", "max"], left=3)
    for r in rec.results:
        t.add_row(r["dtype"], r["op"], r["shape"], str(r["iters"]), f"{r['median_s'] * 1e3:.3f}",
                  _num(r["tflops_mean"]), _num(r["tflops_median"]), _num(r["tflops_max"]))
    con.print(t)
    for dtype, b in rec.best.items():
        con.print(f"best {dtype}: [bold]{_num(b['best_tflops'])} TFLOP/s[/] @ {b['shape']} ({b['op']}; "
                  f"median {_num(b['median_tflops'])})")
    if rec.skipped_shapes:
        con.print(f"skipped (do not fit in memory): {', '.join(rec.skipped_shapes)}")
    _recorded(rec, con, "tflops", "TFLOP/s", "measured peak for MFU and roofline")


def _bandwidth(rec: BandwidthBench, con: Console) -> None:
    t = _table("Memory bandwidth, GB/s (10⁹ B/s; copy counts read + write)",
               ["test", "memory", "size", "iters", "median ms", "mean", "median", "max"], left=2)
    for r in rec.results:
        t.add_row(r["test"], r["memory"], human_bytes(r["bytes"]), str(r["iters"]),
                  f"{r['median_s'] * 1e3:.3f}", f"{r['gbs_mean']:.1f}", f"{r['gbs_median']:.1f}",
                  f"{r['gbs_max']:.1f}")
    con.print(t)
    _recorded(rec, con, "gbs", "GB/s", "measured roofline bandwidth")


def _allreduce(rec: CollectivesBench, con: Console) -> None:
    n = rec.world_size
    lk = rec.link
    t = _table(f"Collectives over {n} ranks ({rec.backend}); busbw = algbw × nccl-tests factor",
               ["op", "size", "dtype", "time µs", "algbw GB/s", "busbw GB/s"]
               + ([f"% of {lk['name']}"] if lk else []))
    for r in rec.results:
        t.add_row(r["op"], human_bytes(r["bytes"]), r["dtype"], f"{r['time_s'] * 1e6:,.1f}",
                  _num(r["algbw_gbs"]), _num(r["busbw_gbs"]),
                  *([f"{r['link_pct']:.0f}%" if r.get("link_pct") is not None else "—"] if lk else []))
    con.print(t)
    if lk:
        basis = f"{lk['basis']}; " if lk.get("basis") and lk["basis"] != "given by --link" else ""
        con.print(f"link: {lk['name']}, {lk['gbs']:g} GB/s per direction ({basis}{lk['source']})")
    else:
        why = f"{rec.link_note}; " if rec.link_note else ""
        con.print(f"link: unknown ({why}pass --link nvlink4|pcie5|ndr|... to see busbw as a share of it)")
    factors = ", ".join(f"{op} {f:g}" for op, f in rec.bus_factors.items())
    con.print(f"bus factors for n={n}: {factors}")


def _dataloader(rec: DataloaderBench, con: Console) -> None:
    t = _table("Reference data pipeline (workload/data.make_loader), loader alone",
               ["workers", "pin", "batches", "first ms", "ms/batch", "batches/s", "tokens/s"], left=2)
    for r in rec.results:
        t.add_row(str(r["num_workers"]), "on" if r["pin_memory"] else "off", str(r["batches"]),
                  f"{r['first_batch_s'] * 1e3:.1f}", f"{r['median_batch_s'] * 1e3:.2f}",
                  f"{r['batches_per_s']:,.0f}", f"{r['tokens_per_s']:,.0f}")
    con.print(t)
    b = rec.best
    con.print(f"fastest: num_workers {b['num_workers']}, pin_memory {'on' if b['pin_memory'] else 'off'} "
              f"({b['tokens_per_s']:,.0f} tokens/s; batch {rec.config['micro_batch']} × "
              f"{rec.config['seq_len']} tokens; ms/batch is the median after the first batch)")


def _shapes(rec: ShapesBench, con: Console) -> None:
    c = rec.config
    t = _table(f"GEMM shape search, h={c['hidden']}, M={c['tokens']} tokens, T={c['seq_len']}, {c['dtype']}",
               ["group", "value", "note", "median ms", "TFLOP/s", "useful", "rank"], left=3)
    for r in rec.results:
        t.add_row(r["group"], str(r["value"]), r["note"], f"{r['median_s'] * 1e3:.3f}",
                  _num(r["tflops_median"]), _num(r["useful_tflops"]),
                  f"[bold]{r['rank']}[/]" if r["rank"] == 1 else str(r["rank"]))
    con.print(t)
    con.print(escape("GEMMs: d_ff [M,h]·[h,2·d_ff] + [M,d_ff]·[d_ff,h]; vocab [M,h]·[h,V]; head_dim "
                     "Q·Kᵀ + P·V per head. TFLOP/s are medians; useful = unpadded FLOPs / time (ranks)."))
    con.print("best: " + ", ".join(f"{g} {v}" for g, v in rec.best.items()))


def _mib(n: int | None) -> str:
    return "—" if not n else f"{n / 2**20:,.0f} MiB"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _batch(rec: BatchBench, con: Console) -> None:
    t = _table("Reference workload per micro-batch (tokens/s over the measured steps)",
               ["micro-batch", "tokens/step", "step ms", "tokens/s", "MFU", "peak", "planned"])
    best = rec.best.get("micro_batch")
    for r in rec.results:
        tps = f"{r['tokens_per_s']:,.0f}"
        t.add_row(str(r["micro_batch"]), f"{r['tokens_per_step']:,}", f"{r['step_time_s'] * 1e3:,.1f}",
                  f"[bold]{tps}[/]" if r["micro_batch"] == best else tps, _pct(r["mfu"]),
                  _mib(r["peak_memory_bytes"]), _mib(r["planned_bytes"]))
    con.print(t)
    if any(r.get("peak_memory_kind") == "process_rss" for r in rec.results):
        con.print("peak: the run's process resident set (torch itself included); planned: the planner's training "
                  "memory above it (`trainprof plan`)")
    if rec.best:
        con.print(f"fastest: micro-batch {best} ({rec.best['tokens_per_s']:,.0f} tokens/s)")
    if rec.stop:
        con.print(f"stopped: {escape(rec.stop['reason'])}")


def _scaling(rec: ScalingBench, con: Console) -> None:
    t = _table("Data parallelism, the same micro-batch per rank", ["ranks", "step ms", "job tokens/s", "efficiency",
                                                                   "lost ms", "comm", "exposed", "explains"])
    for r in rec.results:
        lost = r["lost_s"]
        t.add_row(str(r["nproc"]), f"{r['step_time_s'] * 1e3:,.1f}", f"{r['job_tokens_per_s']:,.0f}",
                  _pct(r["efficiency"]), "—" if lost is None or r["nproc"] == 1 else f"{lost * 1e3:,.1f}",
                  _pct(r["comm_share"]), _pct(r["exposed_share"]), _pct(r["explained_by_comm"]))
    con.print(t)
    con.print("efficiency = tokens/s(N) / (N × tokens/s(1)); lost: step time beyond one rank's; comm: the "
              "collectives' share of each rank's profiled step (waits for other ranks included); exposed: the part "
              "no compute overlapped; explains: exposed time over the lost time"
              + (f"; {rec.threads_per_rank} thread{'s' if rec.threads_per_rank > 1 else ''} per rank"
                 if rec.threads_per_rank else ""))
    for n in rec.notes:
        con.print(f"[yellow]note:[/] {escape(n)}")
    if rec.failed:
        con.print(f"[red]{rec.failed['nproc']} ranks failed:[/] {escape(rec.failed['reason'])}")


def _recorded(rec: MatmulBench | BandwidthBench, con: Console, key: str, unit: str, what: str) -> None:
    stored = rec.recorded
    if not stored:  # absent (UNSET) on a GPU and with --no-record
        return
    if stored[key]:
        items = ", ".join(f"{k} {v:.3f} {unit}" for k, v in stored[key].items())
        con.print(f"stored as this CPU's {what}: {items} ({stored['cache']})")
    elif stored.get("skipped"):  # measured under load (backends/cpu_peak.py)
        con.print(f"[yellow]nothing stored as this CPU's {what}[/]: {escape(stored['skipped'])}")
    else:
        con.print(f"[yellow]nothing stored as this CPU's {what}[/] (no eligible result, or the cache "
                  "folder is not writable)")


RENDERERS: dict[str, Callable[[Any, Console], None]] = {
    "matmul": _matmul, "bandwidth": _bandwidth, "allreduce": _allreduce,
    "dataloader": _dataloader, "shapes": _shapes, "batch": _batch, "scaling": _scaling,
}


def print_bench(rec: Bench, con: Console) -> None:
    RENDERERS[rec.kind](rec, con)
    con.print(_env_line(rec))
    share = rec.env.others_cpu_share
    if rec.env.device_kind == "cpu" and share is not None and share > OTHERS_WARN_SHARE:
        con.print(f"[yellow]warning:[/] other processes used {share:.0%} of this machine's CPU time "
                  "during the benchmark, so these CPU numbers understate the hardware")
