import json
import math

import pytest

from trainprof import atomic
from trainprof.recordtypes.run import DeviceInfo, RunRecord, StepRecord, run_from_dict
from trainprof.analysis.run.throughput import summarise


def _record(loss=1.0):
    steps = [StepRecord(0, 1.0, 0.1, 0.0, 0.3, 0.5, 0.1, 0.0, 10, loss)]
    dev = DeviceInfo("d", "cpu", None, "fp32", 1.0, "measured")
    return RunRecord(device=dev, model={"params": 1}, config={}, steps=steps,
                     summary=summarise(steps, flops_per_step=1e12, peak_tflops=1.0, warmup_steps=0))


def test_json_round_trip_and_schema_first():
    rec = _record()
    text = rec.to_json()
    assert text.lstrip().startswith('{\n  "schema": "trainprof.run/1"')
    assert run_from_dict(json.loads(text)) == rec


def test_nan_becomes_null_not_invalid_json():
    d = json.loads(_record(loss=math.nan).to_json())
    assert d["steps"][0]["loss"] is None


def test_wrong_schema_is_rejected():
    with pytest.raises(ValueError, match="schema"):
        run_from_dict({"schema": "other/1"})


def test_staged_dir_leaves_nothing_on_failure(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RuntimeError):
        with atomic.staged_dir(out) as stage:
            (stage / "run.json").write_text("{}")
            raise RuntimeError("crash mid-write")
    assert list(tmp_path.iterdir()) == []
    with atomic.staged_dir(out) as stage:
        atomic.write_text(stage / "run.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert (out / "run.json").read_text() == "{}"


# ----------------------------------------------------------------------------- dumps
def test_dumps_is_strict_json_on_both_paths():
    import json

    import numpy as np

    from trainprof import jsontext

    rec = {"a": [1.5, float("nan"), float("inf"), -float("inf")], "b": {"c": None, "d": True}, "e": 1e16}
    fast = jsontext.dumps(rec)  # msgspec path
    assert json.loads(fast) == {"a": [1.5, None, None, None], "b": {"c": None, "d": True}, "e": 1e16}
    assert "NaN" not in fast and "Infinity" not in fast
    # same layout as json.dumps(indent=2): one key per line, ": " and "," separators
    assert fast.splitlines()[:3] == ["{", '  "a": [', "    1.5,"]
    slow = jsontext.dumps({**rec, "n": np.float64(2.5)})  # numpy scalar: json.dumps path
    assert json.loads(slow)["n"] == 2.5 and json.loads(slow)["a"][1] is None


def test_dumps_keeps_non_ascii_escaped():
    import json

    from trainprof import jsontext

    rec = {"name": "kernel\ufffd é → 😀", "n": [1, {"m": "≥"}]}
    text = jsontext.dumps(rec)
    assert text.isascii() and "\\ufffd" in text and "\\u00e9" in text
    assert "\\ud83d\\ude00" in text  # U+1F600 as a surrogate pair, as json.dumps writes it
    assert text == json.dumps(rec, indent=2)


def test_a_journal_line_after_a_torn_one_is_kept(tmp_path):
    # a kill mid-write leaves half a line with no newline; the next append (a --resume) must
    # start its own line, or its record joins the fragment and is skipped with it next time
    from trainprof.jsonl import append_jsonl, read_jsonl

    path = tmp_path / "journal.jsonl"
    append_jsonl(path, {"a": 1})
    with open(path, "a") as f:
        f.write('{"b": 2, "tor')
    append_jsonl(path, {"c": 3})
    assert read_jsonl(path) == [{"a": 1}, {"c": 3}]
