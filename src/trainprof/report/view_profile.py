"""report.html's Profile section (and the Optimised profile's) as one view: its header, notes
and tables (report/view_profile_tables.py) built from the first rank of an analysis (the
others are in the Ranks section), so the template only places them (issue #44 item 5).

Every figure through report/figures.show with its field (`at`: analysis.ranks[0] or
optimised.ranks[0]), as the template showed it. A note mixing the page's own markup (<code>)
with record strings is Markup built with markupsafe, which escapes each record string; a
literal sentence of the template (HTA's, not escaped there) is Markup too, so the bytes stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.base import or_default
from trainprof.report.device_text import device_label
from trainprof.report.figures import LABELS, hta_idle_note, key, show, steps_shown
from trainprof.report.names import short_names
from trainprof.report.templating import NAME_WIDTH
from trainprof.report.top_roofline import bounds_sentence, top_rows
from trainprof.report.view_profile_tables import (critical_table, modules_table, op_table, points_table, roof_table,
                                                  stacks_table, whatif_table)
from trainprof.report.view_table import Table



@dataclass(frozen=True)
class Roofline:
    title: str  # "Roofline of the top 5 operators"
    roofs: Markup  # the roofs' note
    hint: str | None  # the record's hint; `hint_bad`: shown as a warning (no ridge)
    hint_bad: bool
    cpu_roofs: bool  # a GPU trace priced on this machine's CPU roofs: the warning to rerun
    table: Table
    bounds: str | None  # the count of bounds under the top rows' table; None under by-shape points


@dataclass(frozen=True)
class ProfileView:
    title: str  # the h2: "Profile", with the rank of several
    meta: str  # file · device · steps ·\nevents · median step
    chart_ids: dict  # chart name -> id or None (report/chart_registry.py)
    slots: dict  # slot -> chart ids
    temporal_note: Markup | None
    idle_note: str | None  # the idle chart's note, then `idle_more` (host syncs, communication)
    idle_more: tuple[Markup, ...]
    cpu_only: bool  # no device timeline: the note that the tables rank by self CPU time
    ops: Table | None
    kernels: Table | None
    modules_note: Markup | None
    modules: Table | None
    stacks_note: Markup | None
    stacks: Table | None
    roofline: Roofline | None
    no_shapes: bool  # operators but no roofline: the note to record shapes
    critical_title: Markup | str | None  # a literal of the page (its apostrophe not escaped)
    critical: Table | None
    path_note: Markup | None  # the ops on the whole trace's path
    whatif_title: str | None
    whatif: Table | None
    notes: str | None  # the rank's notes, joined


def _temporal_note(r: Any, at: str, has_steps: bool) -> Markup:
    tb, f = r.temporal_breakdown, at + ".temporal_breakdown"
    hn = hta_idle_note(tb, f)
    return Markup("Share of the device timeline (span {}) spent computing, communicating, copying, or idle (HTA's "
                  "definition). {}.{}").format(show(tb.span_us, "us", f + ".span_us"),
                                               LABELS["temporal_note" if has_steps else "temporal_note.no_steps"],
                                               Markup(" {}.").format(hn) if hn else "")


def _idle_more(r: Any, at: str) -> tuple[Markup, ...]:
    out = []
    sc = r.idle_breakdown.sync_calls
    if sc:
        out.append(Markup("Host syncs: ") + Markup(", ").join(
            Markup("<code>{}</code> ×{}").format(c.name, show(c.count, "int", f"{at}.idle_breakdown.sync_calls[{i}].count"))
            for i, c in enumerate(sc[:4])))
    cm = r.communication
    if cm and cm.kernels:
        f = at + ".communication"
        out.append(Markup("{}: {} {}, {} {}, {} {}.").format(
            LABELS["communication"], LABELS["communication.union"], show(cm.union_us, "us", f + ".union_us"),
            show(cm.overlap_pct, "pct_value", f + ".overlap_pct"), LABELS["communication.overlap"],
            show(cm.exposed_us, "us", f + ".exposed_us"), LABELS["communication.exposed"]))
    return tuple(out)


def _modules_note(m: Any, at: str) -> Markup:
    linked = or_default(m.backward_linked_pct, None)
    pattern = or_default(m.pattern, None)
    return Markup("Per step, {}; ranked by self time (child modules excluded); backward counted for the module of "
                  "each autograd node's forward op{}{}.").format(
        "device time of the kernels each module launched" if m.time == "device" else "host time",
        f" ({show(m.backward_linked_pct, 'pct_value', at + '.backward_linked_pct')} of backward time linked)"
        if linked is not None else "",
        Markup("; only types matching <code>{}</code>").format(pattern) if pattern else "")


def _roofline(r: Any, at: str, roof_rows: list, names: list[str], point_names: list[str]) -> Roofline:
    h, hf = r.roofline, at + ".roofline"
    roofs = Markup(", ").join(f"{d} {show(v, 'g3', hf + '.peaks_by_dtype' + key(d))} TFLOP/s"
                              for d, v in (h.peaks_by_dtype or {}).items())
    if h.peak_bandwidth_gbs:
        roofs += (f"; memory {show(h.peak_bandwidth_gbs, 'g3', hf + '.peak_bandwidth_gbs')} GB/s; ridge "
                  f"{show(h.ridge_flop_per_byte, 'g3', hf + '.ridge_flop_per_byte')} FLOP/B")
    roofs += Markup(" ({}). FLOPs and bytes from the recorded shapes (minimum traffic).").format(
        or_default(h.source, None))
    return Roofline(
        title=f"Roofline of the top {str(len(roof_rows)) + ' ' if roof_rows else ''}operators", roofs=roofs,
        hint=h.hint or None, hint_bad=not h.ridge_flop_per_byte,
        cpu_roofs=bool(r.has_gpu and (h.source or "").startswith("measured on this machine")),
        table=roof_table(roof_rows, names, at) if roof_rows else points_table(r.roofline_points, point_names, at),
        bounds=bounds_sentence(roof_rows) if roof_rows else None)


def _path_note(cp: Any, at: str) -> Markup | None:
    ops = cp.trace.top_ops[:5] if cp.trace.top_ops else []
    if not ops:
        return None
    names = short_names([o.name for o in ops], 60)
    return Markup("; ").join(
        Markup('<code title="{}">{}</code> ({}) {}').format(
            o.name, names[i], o.kind, show(o.share_pct, "pct_value", f"{at}.critical_path.trace.top_ops[{i}].share_pct"))
        for i, o in enumerate(ops))


def profile_view(a: Analysis | None, label: str, record: str, charts: dict | None) -> ProfileView | None:
    """The first rank of `a`; `record`: its name in the figures' paths (analysis, optimised);
    `charts`: its chart_ids and slots (report/html.py)."""
    if not a or not a.ranks:
        return None
    r, at = a.ranks[0], f"{record}.ranks[0]"
    has_steps = bool(or_default(r.steps, 0))
    ids = charts["chart_ids"] if charts else {}
    meta = f"{r.file} · {device_label(r)} · {steps_shown(r.steps, r.steps_from, at + '.steps')} ·\n" \
           f"{show(r.events, 'int', at + '.events')} events"
    if has_steps and r.step_time_us:
        meta += f" · median step {show(r.step_time_us, 'us', at + '.step_time_us')}"
    op_names = short_names([o.name for o in r.top_ops], NAME_WIDTH)
    m, hs = or_default(r.modules, None), or_default(r.host_stacks, None)
    roof_rows = top_rows(r)
    cp, wi = r.critical_path, r.whatif
    return ProfileView(
        title=label + (f": rank {r.rank} (of {len(a.ranks)} analysed)" if len(a.ranks) > 1 else ""), meta=meta,
        chart_ids=ids, slots=charts["slots"] if charts else {},
        temporal_note=_temporal_note(r, at, has_steps) if ids.get("temporal") else None,
        idle_note=(f"{show(r.idle_breakdown.idle_us, 'us', at + '.idle_breakdown.idle_us')} idle in "
                   f"{show(r.idle_breakdown.gaps, 'int', at + '.idle_breakdown.gaps')} gaps over a "
                   f"{show(r.idle_breakdown.span_us, 'us', at + '.idle_breakdown.span_us')} span; the axis runs to "
                   "the total idle time.") if ids.get("idle") else None,
        idle_more=_idle_more(r, at) if ids.get("idle") else (),
        cpu_only=not r.has_gpu,
        ops=op_table(r.top_ops, "operator", op_names, at + ".top_ops") if r.top_ops else None,
        kernels=op_table(r.top_kernels, "kernel", short_names([k.name for k in r.top_kernels], NAME_WIDTH),
                         at + ".top_kernels") if r.top_kernels else None,
        modules_note=_modules_note(m, at + ".modules") if m and m.rows else None,
        modules=modules_table(m, at + ".modules") if m and m.rows else None,
        stacks_note=Markup("{} samples of the host over the profiled steps; share of samples with the function on the "
                           "stack (the program's own frames, on every sample, left out).").format(
            show(hs.samples, "int", at + ".host_stacks.samples")) if hs and hs.top_total else None,
        stacks=stacks_table(hs, at + ".host_stacks") if hs and hs.top_total else None,
        roofline=_roofline(r, at, roof_rows, op_names, short_names([q.name for q in r.roofline_points], NAME_WIDTH))
        if ids.get("roofline") or roof_rows else None,
        no_shapes=bool(r.top_ops),
        critical_title=(Markup("Critical path: what set each step's time") if has_steps else
                        "Critical path of the whole trace (no steps)") if cp and cp.steps else None,
        critical=critical_table(cp, has_steps, at) if cp and cp.steps else None,
        path_note=_path_note(cp, at) if cp and cp.steps else None,
        whatif_title=("step time" if has_steps else "length of the whole trace (no steps)")
        if wi and wi.scenarios else None,
        whatif=whatif_table(wi, at) if wi and wi.scenarios else None,
        notes="; ".join(r.notes) if r.notes else None)
