"""`trainprof memory -- COMMAND` (issue #38 item 4): the program's own --batch-size measured as a
rung beside its baseline, bf16 applied from outside, and what cannot be applied said."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from trainprof.cli import main

SCRIPT = Path(__file__).parent / "profile_scripts" / "memory_mlp.py"
pytestmark = pytest.mark.slow


def test_the_programs_batch_flag_and_bf16_are_measured(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRAINPROF_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "mem"
    rc = main(["memory", "--steps", "2", "--arg-knob", "--batch-size=1024,4096", "--memory-limit", "1GiB",
               "--out", str(out), "--", sys.executable, str(SCRIPT)])
    assert rc == 0
    doc = json.loads((out / "memory.json").read_text())
    rows = {r["knob"]: r for r in doc["rungs"]}
    assert list(rows) == ["baseline", "--batch-size=1024", "--batch-size=4096", "bf16 autocast"]
    # 1024 is the script's own default, which its command line does not show: measured as a rung too
    assert rows["--batch-size=1024"]["ok"] and rows["--batch-size=1024"]["items_per_step"] == 1024
    base, big = rows["baseline"], rows["--batch-size=4096"]
    assert base["ok"] and big["ok"] and rows["bf16 autocast"]["ok"]
    # 3072 more rows keep ~27 MiB more activations (9 KiB a row) and their gradients' temporaries
    assert big["peak_memory_bytes"] - base["peak_memory_bytes"] > 20 * 2**20 and big["vs_baseline"] > 1.0
    assert big["items_per_step"] == 4096 and base["items_per_step"] == 1024  # samples: float inputs
    for r in (base, big):
        assert set(r["memory_by_phase"]["bytes"]) == {"start", "forward end", "backward end", "step end"}
        assert r["peak_memory_bytes"] >= max(r["memory_by_phase"]["bytes"].values()) and r["fits"] is True
    assert doc["source"] == "process_rss" and "not applied from outside" in doc["not_applied"]
    printed = capsys.readouterr().out
    assert "Memory of your program" in printed and "memory.json" in printed


def test_program_flags_without_a_program_are_refused(capsys):
    assert main(["memory", "--arg-knob", "--batch-size=2"]) == 2
    assert "give its command after --" in capsys.readouterr().err
