"""`trainprof plan` in the terminal: one GPU's memory term by term, what fits, the layouts that
fit, the time to train. Renders a `trainprof.plan/1` record (jobs/plan.py); computes nothing."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from trainprof.report.figures import show
from trainprof.report.formatting import duration
from trainprof.report.fit import FitTable


def memory_table(r: dict[str, Any]) -> FitTable:
    m, lay, g, dev = r["model"], r["layout"], r["per_gpu"], r["device"]
    t = FitTable(title=f"Plan: {m['source']} ({m['params'] / 1e9:,.3g}B params) on {lay['gpus']} × {dev['key']}, "
                 f"{lay['name']}, {lay['dtype']}, {lay['optimizer']}, micro-batch {lay['micro_batch']} × "
                 f"{lay['seq_len']} tokens — per GPU", title_justify="left")
    t.add_column("term")
    t.add_column("what", overflow="fold")
    t.add_column("per GPU", justify="right")
    st, tmp, rt = r["terms"]["states"], r["terms"]["temporaries"], r["runtime"]
    act = r["terms"]["activations"]
    t.add_row("weights", f"{r['bytes_per_param']:.3g} B/param of model states in all (before sharding)",
              show(g["weights_bytes"], "bytes", "plan.per_gpu.weights_bytes"))
    t.add_row("gradients", "" if "grads_bytes" in g["in_peak"] else "made in backward as activations are freed: "
              "not part of the peak", show(g["grads_bytes"], "bytes", "plan.per_gpu.grads_bytes"))
    t.add_row("optimizer states", "fp32 master weights + the optimizer's states" if st["master_weights"]
              else "the optimizer's states", show(g["optimizer_bytes"], "bytes", "plan.per_gpu.optimizer_bytes"))
    t.add_row("activations", f"{act['stage_layers']} layers × {act['in_flight_micro_batches']} micro-batch(es) in "
              f"flight, {lay['recompute']} recompute (Korthikanti et al. 2022)"
              + ("" if "activations_bytes" in g["in_peak"] else "; freed before the step: not part of the peak"),
              show(g["activations_bytes"], "bytes", "plan.per_gpu.activations_bytes"))
    fwd = g["peak_phase"] == "forward/backward"
    parts = [n for n, v in (("loss/backward transients", fwd), ("optimizer step", not fwd and tmp["optimizer_step"]),
                            ("DDP buckets", tmp["ddp_buckets"]), ("ZeRO buckets", tmp["zero_buckets"]),
                            ("gathered units", fwd and tmp["gathered_units"])) if v]
    t.add_row("temporaries", f"at the peak ({g['peak_phase']}): {', '.join(parts)}",
              show(g["temporaries_bytes"], "bytes", "plan.per_gpu.temporaries_bytes"))
    t.add_row("runtime", f"CUDA context {show(rt['cuda_context_bytes'], 'bytes', 'plan.runtime.cuda_context_bytes')}"
              f" + NCCL {r['terms']['runtime']['nccl_groups']} × "
              f"{show(rt['nccl_bytes_per_group'], 'bytes', 'plan.runtime.nccl_bytes_per_group')}",
              show(g["runtime_bytes"], "bytes", "plan.per_gpu.runtime_bytes"))
    verdict = "[green]fits[/]" if r["fits"] else "[red]does not fit[/]"
    t.add_row("[bold]peak[/]", f"{verdict} {dev['capacity_source']}",
              f"[bold]{show(g['peak_bytes'], 'bytes', 'plan.per_gpu.peak_bytes')}[/]")
    if g["host_bytes"]:
        t.add_row("host memory", "offloaded states", show(g["host_bytes"], "bytes", "plan.per_gpu.host_bytes"))
    return t


def layouts_table(r: dict[str, Any]) -> FitTable:
    ls = r["layouts"]
    t = FitTable(title=f"Layouts of {ls['gpus']} GPUs where micro-batch {ls['micro_batch']} fits, cheapest first",
                 title_justify="left")
    for col in ("layout", "peak / GPU", "max micro-batch", "recompute +FLOPs", "pipeline bubble", "traffic ×DDP"):
        t.add_column(col, justify="left" if col == "layout" else "right")
    for i, row in enumerate(ls["rows"]):
        f = f"plan.layouts.rows[{i}]"
        t.add_row(row["name"], show(row["peak_bytes"], "bytes", f + ".peak_bytes"),
                  show(row["max_micro_batch"], "int", f + ".max_micro_batch"),
                  show(row["recompute_extra"], "pct_of_fraction0", f + ".recompute_extra"),
                  show(row["bubble"], "pct_of_fraction0", f + ".bubble"), show(row["comm_vs_ddp"], "g3", f + ".comm_vs_ddp"))
    return t


def print_plan(r: dict[str, Any], con: Console) -> None:
    con.print(memory_table(r))
    mb = r["max_micro_batch"]
    con.print(f"largest micro-batch that fits: {mb}" if mb else "not even micro-batch 1 fits this layout")
    if r["layouts"] is not None:
        if r["layouts"]["rows"]:
            con.print(layouts_table(r))
        else:
            con.print(f"no layout of {r['layouts']['gpus']} GPUs fits micro-batch {r['layouts']['micro_batch']}")
    tm = r["time"]
    if tm is not None:
        con.print(f"time to train {tm['tokens']:.3g} tokens: [bold]{duration(tm['seconds'], 's', 'plan')}[/] on {tm['gpus']} GPU(s) "
                  f"({tm['flops_per_token']:.3g} FLOPs/token × tokens = {tm['total_flops']:.3g} FLOPs at "
                  f"{tm['peak_tflops']:g} TFLOP/s {tm['peak_dtype']} × MFU {tm['mfu']:.3g}, {tm['mfu_source']}; "
                  f"{tm['gpu_years']:,.3g} GPU-years)", markup=True)
