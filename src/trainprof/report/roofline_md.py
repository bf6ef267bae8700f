"""report.md's roofline section: the top-5 table's operators with their `roofline` blocks
(analysis/cost/roofline_top.py; the rows report.html, roofline.png and the terminal show), or an
older record's by-shape points, each figure through report/figures.show with its field."""

from __future__ import annotations

from typing import Any, Callable

from trainprof.recordtypes.analysis import OpRoofline, Rank
from trainprof.recordtypes.roofline import RooflinePoint
from trainprof.recordtypes.base import or_default
from trainprof.report.figures import show
from trainprof.report.md_cells import md_codes, md_table, md_text, or_none
from trainprof.report.top_roofline import bounds_sentence, top_rows
from trainprof.report.units import clip, shapes

Add = Callable[..., None]
Image = Callable[[tuple[str, ...], str], None]


def _dims(d: Any) -> str:
    return clip(shapes(d), 48)


def section(add: Add, image: Image | None, r: Rank, at: str) -> None:
    """The top-5 table's operators on the roofline (their `roofline` blocks); a record from
    before those blocks shows the by-shape points (`roofline_points`) and says so."""
    top, pts = top_rows(r), r.roofline_points or []
    if top:
        _top(add, image, top, at)
    elif pts:
        _by_shape(add, image, pts, at)
    else:
        add("No roofline: the trace carries no input shapes (profile with `record_shapes=True`).", "")
        return
    if r.has_gpu and str(r.roofline.source or "").startswith("measured on this machine"):
        add("**Caveat:** these roofs were measured on the CPU that ran the analysis, not on the "
            "trace's GPU (the trace does not name it); rerun `trainprof analyze --gpu-spec KEY` "
            "(see `trainprof specs`) for meaningful roofline percentages.", "")
    elif or_default(r.roofline.hint, None):  # unknown roofs (or an assumed row) say why
        add(f"**Roofs:** {md_text(r.roofline.hint)}", "")


def _top(add: Add, image: Image | None, top: list, at: str) -> None:
    """The top-5 table's operators on the roofline: same rows, same times (analysis/cost/roofline_top.py)."""
    add("**Roofline of the top-5 operators** (the operators of the table above, with its times; FLOPs "
        "and bytes summed over every call from its recorded shapes):", "")
    names = md_codes([o.name for o, _ in top], 48)
    rows = []
    for i, ((o, rf), name) in enumerate(zip(top, names)):
        f = f"{at}.top_ops[{i}]"
        g = f + ".roofline"
        rf = rf or OpRoofline()
        rows.append([str(i + 1), name, show(or_none(o.total_us), "us", f + ".total_us"),
                     show(rf.flops, "g3", g + ".flops"), show(rf.bytes, "g3", g + ".bytes"),
                     show(rf.intensity, "g3", g + ".intensity"), show(rf.achieved_tflops, "g3", g + ".achieved_tflops"),
                     show(rf.attainable_tflops, "g3", g + ".attainable_tflops"),
                     show(rf.roofline_pct, "pct0", g + ".roofline_pct"), md_text(rf.bound or "—")])
    add(*md_table(["#", "operator", "time", "FLOPs", "bytes", "FLOP/B", "achieved TFLOP/s",
                 "attainable TFLOP/s", "of roof", "bound"], rows, right={0, 2, 3, 4, 5, 6, 7, 8}))
    notes = [(i, name, rf) for i, ((_, rf), name) in enumerate(zip(top, names), 1) if rf is not None and rf.note]
    for i, name, rf in notes:  # estimates and rows above the roof say why
        add(f"* #{i} {name}: {md_text(rf.note)}")
    if notes:
        add("")
    if image is not None:
        image(("roofline.png", "roofline_rank0.png"), "Roofline of the top-5 operators")
    add(bounds_sentence(top), "")


def _by_shape(add: Add, image: Image | None, pts: list[RooflinePoint], at: str) -> None:
    """An older record's by-shape points (`roofline_points`)."""
    add("**Roofline of the top operators by shape** (a record from before the top-5 operators were "
        "priced; `trainprof analyze` again gives the top-5 table's operators):", "")
    head = ["#", "operator", "shapes", "time", "FLOP/B", "achieved TFLOP/s", "roof TFLOP/s", "of roof", "bound"]
    names = md_codes([p.name for p in pts[:5]], 48)
    rows = []
    for i, (p, name) in enumerate(zip(pts[:5], names)):
        f = f"{at}.roofline_points[{i}]"
        rows.append([str(i + 1), name, md_text(_dims(p.input_dims)),
                     show(p.device_time_us, "us", f + ".device_time_us"),
                     show(p.intensity, "g3", f + ".intensity"),
                     show(p.achieved_tflops, "g3", f + ".achieved_tflops"),
                     show(p.attainable_tflops, "g3", f + ".attainable_tflops"),
                     show(p.roofline_pct, "pct0", f + ".roofline_pct"), md_text(p.bound or "?")])
    add(*md_table(head, rows, right={0, 3, 4, 5, 6, 7}))
    for i, (p, name) in enumerate(zip(pts[:5], names), 1):
        if p.note:  # estimates and points above the roof say why
            add(f"* #{i} {name}: {md_text(p.note)}")
    if any(p.note for p in pts[:5]):
        add("")
    if image is not None:
        image(("roofline.png", "roofline_rank0.png"), "Roofline of the top operators")
    bounds = [p.bound for p in pts[:5]]
    add(f"Of these five, {bounds.count('compute')} are compute-bound, {bounds.count('memory')} "
        f"memory-bound and {bounds.count('latency')} latency-bound"
        + (" (far below both roofs: launch or per-call overhead dominates)." if "latency" in bounds else "."), "")
