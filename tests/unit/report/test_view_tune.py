"""report/view_tune.py: the ladder's rows, read back against a tune record with planted trials."""

from __future__ import annotations

from pathlib import Path

import msgspec

from trainprof.recordtypes.base import load
from trainprof.recordtypes.tune import Tune
from trainprof.report.view_tune import ladder_table

TUNE = Path(__file__).resolve().parents[2] / "data" / "reports" / "tune" / "tune.json"


def test_each_trial_row_says_skipped_failed_kept_or_not_confirmed():
    doc = load(TUNE, Tune)
    gc, bf16 = doc.trials  # the shipped ladder: gc_disable kept, bf16 not faster
    planted = [msgspec.structs.replace(gc, skipped=True),
               msgspec.structs.replace(bf16, accuracy_ok=False, accepted=True, reason=None)]
    t = ladder_table(msgspec.structs.replace(doc, trials=planted))
    rows = {r.cells[0].text: r for r in t.rows}
    assert list(rows) == ["baseline", "gc_disable", "bf16"] and all(len(r.cells) == len(t.head) for r in t.rows)
    skipped = [str(c.text) for c in rows["gc_disable"].cells]
    assert skipped[7:10] == ["—", "skipped", "no"] and rows["gc_disable"].cls == "kept"  # in best.knobs
    bf = rows["bf16"]
    assert str(bf.cells[7].text).startswith('<span class="bad">failed</span>') and bf.cls == ""
    assert bf.cells[-1].text == "not confirmed by the verify pairs"  # passed its trial, not kept
    assert rows["baseline"].cls is None and rows["baseline"].cells[4].text == "1.00"
