"""report.html's Profile section, its tables (report/view_table.py): the top operators and
kernels, modules, host stacks, the roofline (top rows, or by-shape points in an older record),
the critical path per step and the what-if projections. Every figure through
report/figures.show with its field in the record (`at`: the rank's path, analysis.ranks[0]), as
the template showed it; each table spaced as the page's source spaced it."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from trainprof.recordtypes.base import or_default
from trainprof.report.figures import key, show
from trainprof.report.formatting import shapes
from trainprof.report.names import short_name
from trainprof.report.view_table import Cell, Row, Table, head, table

DASH = "—"
NUM = Cell("#")  # the rank column's header: a literal "#" (head() reads a leading "#" as a figure's column)


def _fig(v: Any, fmt: str, field: str) -> Cell:
    return Cell(show(v, fmt, field), "n")


def op_table(rows: list, kind: str, names: list[str], at: str) -> Table:
    """The top operators (kind "operator") or kernels ("kernel", with their class)."""
    n = "calls" if kind == "operator" else "count"
    out = []
    for i, o in enumerate(rows):
        f = f"{at}[{i}]"
        cls = (Cell(f"{or_default(o.kind, None) or ''}{' (Tensor Cores)' if o.tensor_core else ''}", br=True),) \
            if kind == "kernel" else ()
        out.append((Cell(i + 1, "n"), Cell(names[i], "name", title=o.name), *cls,
                    Cell(show(getattr(o, n), "int", f"{f}.{n}"), "n", br=not cls), _fig(o.total_us, "us", f + ".total_us"),
                    Cell(show(o.mean_us, "us", f + ".mean_us"), "n", br=True),
                    _fig(o.share_pct, "pct_value", f + ".share_pct")))
    return table((NUM, *head(kind, *(("class",) if kind == "kernel" else ()), "#calls", "#total", "#mean", "#share")),
                 out, spread=True, row_lines=True)


def modules_table(m: Any, at: str) -> Table:
    rows = []
    for i, mr in enumerate(m.rows[:12]):
        g = f"{at}.rows[{i}]"
        rows.append((Cell(i + 1, "n"), Cell(mr.module, "name"), _fig(mr.instances, "int", g + ".instances"),
                     _fig(mr.forward_us, "us", g + ".forward_us"), _fig(mr.backward_us, "us", g + ".backward_us"),
                     _fig(mr.self_us, "us", g + ".self_us"), _fig(mr.share_pct, "pct_value", g + ".share_pct"),
                     _fig(or_default(mr.tflops, None), "g3", g + ".tflops"),
                     _fig(or_default(mr.mfu_pct, None), "pct_value", g + ".mfu_pct")))
    return table((NUM, *head("module", "n", "forward", "backward", "self", "share", "TFLOP/s", "MFU")), rows,
                 row_lines=True, head_line=True, tbody_inline=True)


def stacks_table(hs: Any, at: str) -> Table:
    rows = [(Cell(i + 1, "n"), Cell(f.function, "name"),
             _fig(f.total_pct, "pct_value", f"{at}.top_total[{i}].total_pct"),
             _fig(f.self_pct, "pct_value", f"{at}.top_total[{i}].self_pct")) for i, f in enumerate(hs.top_total)]
    return table((NUM, *head("function", "total", "self")), rows, row_lines=True, head_line=True, tbody_inline=True)


def _roof_row(i: int, o: Any, q: Any, name: str, at: str) -> Row:
    f = f"{at}.top_ops[{i}]"
    lead = (Cell(i + 1, "n"), Cell(name, "name", title=o.name), _fig(o.total_us, "us", f + ".total_us"))
    if not q:  # no block for this row: dashes, and the row does not end its line (as the source wrote it)
        return Row((*lead, *(Cell(DASH, "n", br=j == 0) for j in range(6)), Cell(DASH)), end=False)
    g = f + ".roofline"
    bound = q.bound or DASH
    if q.note:
        bound = Markup('{}<br><span class="note">{}</span>').format(bound, q.note)
    return Row((*lead, Cell(show(q.flops, "g3", g + ".flops"), "n", br=True), _fig(q.bytes, "g3", g + ".bytes"),
                _fig(q.intensity, "g3", g + ".intensity"),
                Cell(show(q.achieved_tflops, "g3", g + ".achieved_tflops"), "n", br=True),
                _fig(q.attainable_tflops, "g3", g + ".attainable_tflops"),
                Cell(show(q.roofline_pct, "pct_value0", g + ".roofline_pct"), "n", br=True), Cell(bound)))


def roof_table(roof_rows: list, names: list[str], at: str) -> Table:
    """The top-5 table's operators with their roofline blocks (report/top_roofline.py)."""
    return table((NUM, *head("operator", "#time", "#FLOPs", "#bytes", "#FLOP/B", "\n#achieved TFLOP/s",
                      "#attainable TFLOP/s", "#of roof", "bound")),
                 [_roof_row(i, o, q, names[i], at) for i, (o, q) in enumerate(roof_rows)], spread=True, row_lines=True)


def points_table(points: list, names: list[str], at: str) -> Table:
    """An older record's roofline: its by-shape points."""
    rows = []
    for i, q in enumerate(points):
        f = f"{at}.roofline_points[{i}]"
        dims = or_default(q.input_dims, None)
        rows.append((Cell(i + 1, "n"), Cell(names[i], "name", title=q.name),
                     Cell(short_name(shapes(dims), 60), "name"),
                     Cell(show(q.device_time_us, "us", f + ".device_time_us"), "n", br=True),
                     _fig(q.intensity, "g3", f + ".intensity"), _fig(q.achieved_tflops, "g3", f + ".achieved_tflops"),
                     Cell(show(q.attainable_tflops, "g3", f + ".attainable_tflops"), "n", br=True),
                     _fig(q.roofline_pct, "pct_value0", f + ".roofline_pct"), Cell(q.bound or "?")))
    return table((NUM, *head("operator", "shapes", "#time", "#FLOP/B", "\n#achieved TFLOP/s", "#roof TFLOP/s",
                      "#of roof", "bound")), rows, spread=True, row_lines=True)


def critical_table(cp: Any, has_steps: bool, at: str) -> Table:
    """Each step's path length and its share by kind (the first six kinds)."""
    rows = []
    for i, s in enumerate(cp.steps):
        f = f"{at}.critical_path.steps[{i}]"
        shares = ", ".join(f"{k} {show(v, 'pct_value', f + '.share_pct' + key(k))}"
                           for k, v in list(s.share_pct.items())[:6])
        rows.append((Cell(DASH if s.step < 0 else s.step, "n"), _fig(s.length_us, "us", f + ".length_us"),
                     Cell(shares, br=True)))
    return table(head("step" if has_steps else "trace", "#length", "share of the path by kind"), rows, spread=True,
                 row_lines=True)


def whatif_table(wi: Any, at: str) -> Table:
    rows = []
    for i, s in enumerate(wi.scenarios):
        f = f"{at}.whatif.scenarios[{i}]"
        rows.append((Cell(s.label), _fig(s.measured_step_us, "us", f + ".measured_step_us"),
                     _fig(s.projected_step_us, "us", f + ".projected_step_us"),
                     Cell(show(s.speedup or None, "x3", f + ".speedup"), "n", br=True),
                     _fig(s.gain_pct, "pct_value", f + ".gain_pct")))
    return table(head("edit", "#measured", "#projected", "#speed-up", "#gain"), rows, spread=True, row_lines=True)
