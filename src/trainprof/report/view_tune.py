"""report.html's tuning ladder as a table (report/view_table.py): the baseline, then each trial
with its figures, the accuracy guard's verdict, whether it passed its trial and whether it was
kept (passed, and confirmed by the verify pairs). Every figure through report/figures.show
with its field in tune.json, as the template showed it."""

from __future__ import annotations

from numbers import Number
from typing import Any

from markupsafe import Markup, escape

from trainprof.report.figures import show
from trainprof.report.view_table import Cell, Row, Table, head, table

YES, NO, BAD = (Markup('<span class="yes">{}</span>'), Markup('<span class="no">{}</span>'),
                Markup('<span class="bad">{}</span>'))


def _accuracy(t: Any) -> Any:
    """The accuracy guard's verdict, with the loss deviation (and Δ validation loss) under it."""
    if not t.ok:
        return "—"
    out = YES.format("ok") if t.accuracy_ok else BAD.format("failed")
    if isinstance(t.loss_deviation, Number):
        note = f"|Δloss| {t.loss_deviation:.3f}" + (f", Δval {t.val_delta:+.3f}" if isinstance(t.val_delta, Number)
                                                    else "")
        out += Markup('<br><span class="note">{}</span>').format(note)
    return out


def _trial(t: Any, i: int, kept: bool) -> Row:
    f = f"tune.trials[{i}]"
    what = escape(t.description or "") + (Markup('<br><span class="note">cost: {}</span>').format(t.cost)
                                          if t.cost else "")
    if t.skipped:
        cells = (*(Cell("—", "n", br=j == 0) for j in range(5)), Cell("—"), Cell("skipped", "no"), Cell("no", "no"))
    else:
        cells = (Cell(show(t.step_time_s, "s", f + ".step_time_s"), "n", br=True),
                 Cell(show(t.step_gain or None, "num2", f + ".step_gain"), "n"),
                 Cell(show(t.speedup or None, "num2", f + ".speedup"), "n"),
                 Cell(show(t.mfu, "pct_of_fraction0", f + ".mfu"), "n", br=True),
                 Cell(show(t.peak_memory_bytes, "bytes", f + ".peak_memory_bytes"), "n"),
                 Cell(_accuracy(t), br=True),
                 Cell("passed" if t.accepted else NO.format("no"), br=True),
                 Cell(YES.format("yes") if kept else NO.format("no"), br=True))
    why = t.reason or ("not confirmed by the verify pairs" if t.accepted and not kept else "")
    return Row((Cell(t.knob), Cell(what), *cells, Cell(why, br=bool(t.skipped))), "kept" if kept else "")


def ladder_table(tune: Any) -> Table:
    tb, best = tune.baseline, tune.best
    cfg = tb.config
    baseline = Row((Cell("baseline"), Cell(f"{cfg.get('dtype')}, {cfg.get('optimizer')} AdamW, micro-batch "
                                           f"{cfg.get('micro_batch')} × {cfg.get('seq_len')}"),
                    Cell(show(tb.step_time_s, "s", "tune.baseline.step_time_s"), "n", br=True), Cell("", "n"),
                    Cell("1.00", "n"), Cell(show(tb.mfu, "pct_of_fraction0", "tune.baseline.mfu"), "n"),
                    Cell(show(tb.peak_memory_bytes, "bytes", "tune.baseline.peak_memory_bytes"), "n"),
                    Cell("—"), Cell(""), Cell(""), Cell("")))
    trials = [_trial(t, i, t.knob in best.knobs) for i, t in enumerate(tune.trials)]
    return table(head("knob", "what it does", "#median step", "#× best so far", "#× baseline", "#MFU",
                      "\n#peak mem", "accuracy", "trial", "kept", "why not"), [baseline, *trials], spread=True,
                 row_lines=True)
