"""The per-module table (analysis.json `ranks[i].modules`, analysis/cost/modules.py) in the terminal."""

from __future__ import annotations

from rich.table import Table

from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.modules import ModuleTable
from trainprof.report.console import escape
from trainprof.report.figures import show
from trainprof.report.fit import FitTable

MAX_ROWS = 12  # module types shown; analysis.json keeps them all


def module_title(m: ModuleTable) -> str:
    where = "device time of the kernels each module launched" if m.time == "device" else "host time"
    return f"Modules, per step ({where}; ranked by self time, children excluded)"


def module_table(m: ModuleTable, at: str = "analysis.ranks[0].modules") -> Table:
    t = FitTable(title=module_title(m), title_justify="left")
    for col in ("module", "n", "forward", "backward", "self", "share", "TFLOP/s", "MFU"):
        t.add_column(col, justify="left" if col == "module" else "right", no_wrap=col == "module",
                     overflow="ellipsis" if col == "module" else "fold")
    for i, r in enumerate(m.rows[:MAX_ROWS]):
        f = f"{at}.rows[{i}]"
        t.add_row(escape(r.module), show(r.instances, "int", f + ".instances"), show(r.forward_us, "us", f + ".forward_us"),
                  show(r.backward_us, "us", f + ".backward_us"), show(r.self_us, "us", f + ".self_us"),
                  show(r.share_pct, "pct_value", f + ".share_pct"), show(or_default(r.tflops, None), "g3", f + ".tflops"),
                  show(or_default(r.mfu_pct, None), "pct_value", f + ".mfu_pct"))
    return t


def module_note(m: ModuleTable, at: str = "analysis.ranks[0].modules") -> str:
    linked = or_default(m.backward_linked_pct, None)
    bits = [f"{show(m.total_self_us, 'us', at + '.total_self_us')} in modules per step"]
    if linked is not None:
        bits.append(f"{show(linked, 'pct_value', at + '.backward_linked_pct')} of backward time linked to a module")
    if or_default(m.pattern, None):
        bits.append(f"only modules matching {escape(repr(m.pattern))}")
    return "  " + "; ".join(bits)


def host_stacks_line(hs, at: str = "analysis.ranks[0].host_stacks") -> str:  # noqa: ANN001
    """py-spy's view of the host (--py-spy): the functions holding it, by inclusive share."""
    top = ", ".join(f"{escape(f.function)} {show(f.total_pct, 'pct_value', f'{at}.top_total[{i}].total_pct')}"
                    for i, f in enumerate(hs.top_total[:5]))
    return f"  host (py-spy, {show(hs.samples, 'int', at + '.samples')} samples): {top or 'no user function sampled'}"
