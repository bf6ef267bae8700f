"""report.html's Memory section as tables (report/view_table.py): the analytic terms beside the
measured peak, and the memory ladder's steps. Every figure through report/figures.show with
its field in memory.json, as the template showed it."""

from __future__ import annotations

from typing import Any

from trainprof.report.figures import show
from trainprof.report.view_table import Cell, Table, head, table

# memory.json field -> its row's label, in the table's order
TERMS = (("params_bytes", "weights"), ("grads_bytes", "gradients"), ("optimizer_bytes", "optimizer states"),
         ("activations_bytes", "activations"), ("logits_bytes", "logits"), ("analytic_peak_bytes", "peak (analytic)"),
         ("measured_above_baseline_bytes", "measured peak above baseline"),
         ("measured_peak_bytes", "measured peak (raw)"))


def terms_table(memory: Any) -> Table:
    """The terms the record has (an absent one, null, is left out)."""
    return table(head("term", "#size"), ((Cell(label), Cell(show(getattr(memory, k), "bytes", f"memory.{k}"), "n"))
                                         for k, label in TERMS if getattr(memory, k) is not None))


def _ladder_row(step: Any, i: int) -> tuple[Cell, ...]:
    f = f"memory.ladder[{i}]"
    above = step.measured_above_baseline_bytes
    measured = (show(above, "bytes", f + ".measured_above_baseline_bytes") if above is not None
                else show(step.measured_peak_bytes, "bytes", f + ".measured_peak_bytes"))
    # a rung that did not run on a GPU job: its plan is the GPU's
    gpu = " (GPU)" if step.planned_device == "cuda" and step.status == "not run" else ""
    return (Cell(step.step), Cell(step.change), Cell(step.status), Cell(measured, "n", br=True),
            Cell(show(step.analytic_peak_bytes, "bytes", f + ".analytic_peak_bytes"), "n"),
            Cell(show(step.planned_peak_bytes, "bytes", f + ".planned_peak_bytes") + gpu, "n"),
            Cell(show(step.step_time_s, "s", f + ".step_time_s"), "n"))


def ladder_table(memory: Any) -> Table | None:
    if not memory.ladder:
        return None
    return table(head("step", "change", "status", "#measured", "#analytic", "#plan", "#step time"),
                 (_ladder_row(s, i) for i, s in enumerate(memory.ladder)))
