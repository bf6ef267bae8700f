"""report/view_memory.py: the Memory section's tables, read back against a planted record."""

from __future__ import annotations

from pathlib import Path

import msgspec

from trainprof.recordtypes.base import load
from trainprof.recordtypes.memory import Memory
from trainprof.report.view_memory import TERMS, ladder_table, terms_table

MEMORY = Path(__file__).resolve().parents[2] / "data" / "reports" / "memory" / "memory.json"


def test_terms_leave_out_a_null_one_and_a_rung_not_run_says_its_plan_is_the_gpus():
    doc = load(MEMORY, Memory)
    last = msgspec.structs.replace(doc.ladder[-1], status="not run", planned_device="cuda")
    doc = msgspec.structs.replace(doc, logits_bytes=None, ladder=[*doc.ladder[:-1], last])
    labels = [r.cells[0].text for r in terms_table(doc).rows]
    assert "logits" not in labels and labels == [lab for k, lab in TERMS if getattr(doc, k) is not None]
    rows = ladder_table(doc).rows
    assert len(rows) == len(doc.ladder) and rows[-1].cells[5].text.endswith(" (GPU)")
    assert not any(str(r.cells[5].text).endswith("(GPU)") for r in rows[:-1])
