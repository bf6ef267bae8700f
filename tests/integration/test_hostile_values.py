"""Issue #45, item 6: values that were tracebacks. Each is now handled, or one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainprof.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "traces" / "idle_causes.json"
NCU = DATA / "ncu" / "raw_page.csv"
SRC = Path(__file__).resolve().parents[2] / "src"


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("trainprof: error: "), err
    return lines[0]


def test_a_profiler_step_number_beyond_int64_is_read_as_no_number(tmp_path, capsys):
    """"ProfilerStep#" + 40 digits was an OverflowError traceback (np.int64 of the number)."""
    d = json.loads(TRACE.read_text())
    for e in d["traceEvents"]:
        if e.get("name") == "ProfilerStep#2":
            e["name"] = "ProfilerStep#" + "9" * 40
    p = tmp_path / "t.json"
    p.write_text(json.dumps(d))
    assert main(["analyze", str(p)]) == 0
    assert "2 profiler steps" in capsys.readouterr().out


def test_an_ncu_csv_with_a_short_units_row_or_an_infinite_cell_is_read(tmp_path, capsys):
    """A units row shorter than the 'Kernel Name' column was an IndexError traceback; a cell of
    1e400 would have reached analysis.json as Infinity."""
    lines = NCU.read_text().splitlines()
    units = next(i for i, ln in enumerate(lines) if ln.startswith('"",'))
    lines[units] = '"","",""'
    lines[units + 1] = lines[units + 1].replace('"1,000,000"', '"1e400"', 1)
    csv = tmp_path / "short.csv"
    csv.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o"
    assert main(["analyze", str(TRACE), "--ncu", str(csv), "--out", str(out), "--no-report"]) == 0
    text = (out / "analysis.json").read_text()
    assert "Infinity" not in text and "NaN" not in text
    json.loads(text)


def test_a_file_name_that_is_not_utf8_is_shown_as_its_bytes(tmp_path):
    """A trace named b'bad\\xff.json' (and an --out named b'o\\xfe') raised UnicodeEncodeError
    writing analysis.json, printing, and rendering the reports. The names are shown as `\\xff`
    (controls.visible), in the terminal and in the records, which stay valid UTF-8 JSON."""
    base = os.fsencode(tmp_path)
    trace, out = base + b"/bad\xff.json", base + b"/o\xfe"
    with open(trace, "wb") as f:
        f.write(TRACE.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    r = subprocess.run([sys.executable, "-m", "trainprof", "analyze", trace, "--out", out], capture_output=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    assert b"bad\\xff.json" in r.stdout and b"o\\xfe/report.md" in r.stdout and b"\xff" not in r.stdout
    doc = json.loads((Path(os.fsdecode(out)) / "analysis.json").read_bytes().decode("utf-8"))
    assert doc["ranks"][0]["file"].endswith("bad\\xff.json")
    assert "o\\\\xfe" in (Path(os.fsdecode(out)) / "report.md").read_text("utf-8")  # the title, escaped for Markdown
    r = subprocess.run([sys.executable, "-m", "trainprof", "report", out, "--force"], capture_output=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr.decode(errors="replace")[-2000:]


@pytest.mark.parametrize("argv, flag", [
    (["run", "--steps", "99999999999999999999"], "train.steps (--steps) must be an integer from 1 to 2,147,483,647"),
    (["run", "--system-interval", "1e20"], "run.system_interval (--system-interval) must be from 0"),
])
def test_run_values_past_their_bounds_are_one_line(tmp_path, capsys, argv, flag):
    """--steps 99999999999999999999 was an OverflowError from the DataLoader's sampler; 1e20 s an
    OverflowError in the sampler thread (Event.wait), after the whole run."""
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    assert flag in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


def test_a_world_size_that_is_not_a_number_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "abc")
    assert main(["run", "--steps", "1", "--warmup-steps", "0", "--out", str(tmp_path / "o")]) == 2
    assert "WORLD_SIZE='abc': expected a whole number" in _one_error_line(capsys.readouterr().err)
