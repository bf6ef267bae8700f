"""Property-based fuzzing of every record loader (issue #19): run.json, analysis.json,
tune.json, memory.json, bench.json, ettr.json, diff.json for `report` (the typed ones through
recordtypes.base.load, then rendered from their Structs); journal.jsonl for `ettr`; the
tune journal; checkpoint.json. Each mutated record gives a result, or exit 2 with one line
naming the file; never a traceback.

The mutations: a field removed, a field replaced by any JSON value, the file cut short.
TRAINPROF_FUZZ_EXAMPLES=5000 runs a longer hunt.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainprof.cli import main
from trainprof.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"
SCALE = int(os.environ.get("TRAINPROF_FUZZ_EXAMPLES", "200")) / 200
RECORDS = {"run": "cpu_run/run.json", "analysis": "multi_rank/analysis.json", "tune": "tune/tune.json",
           "memory": "memory/memory.json", "bench": "bench/bench.json", "ettr": "cpu_run/ettr.json",
           "diff": "diff/diff.json"}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10))
values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids,
                                                                                           max_size=3), max_leaves=6)


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def one_error_line(rc: int, err: str) -> None:
    assert rc in (0, 2), err
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("trainprof: error: ") and "Traceback" not in err, err


def _paths(obj, prefix=()):
    """Every (container path, key) in a JSON tree."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix, k
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:4]):  # the first few rows are enough
            yield prefix, i
            yield from _paths(v, prefix + (i,))


def mutate(doc, data) -> object:
    doc = json.loads(json.dumps(doc))
    paths = list(_paths(doc))
    for _ in range(data.draw(st.integers(1, 3))):
        where, key = data.draw(st.sampled_from(paths))
        parent = doc
        try:
            for k in where:
                parent = parent[k]
            if data.draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(key, None)
            else:
                parent[key] = data.draw(values)
        except (KeyError, IndexError, TypeError):  # an earlier mutation removed this path
            continue
    return doc


def _report(kind: str, text: bytes, fmt: str) -> None:
    name = Path(RECORDS[kind]).name
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d) / "rec"
        folder.mkdir()
        (folder / name).write_bytes(text)
        rc, _, err = cli(["report", str(folder), "--out", str(Path(d) / "out"), "--format", fmt])
        one_error_line(rc, err)


@pytest.mark.parametrize("kind", list(RECORDS))
@settings(max_examples=int(40 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_report_md_on_mutated_records(kind, data):
    doc = json.loads((DATA / RECORDS[kind]).read_text())
    raw = json.dumps(mutate(doc, data)).encode()
    if data.draw(st.integers(0, 9)) == 0:
        raw = raw[: data.draw(st.integers(0, len(raw)))]  # cut short (a kill mid-copy)
    _report(kind, raw, "md")


@settings(max_examples=int(12 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["run", "tune", "memory", "ettr", "diff", "bench"]), data=st.data())
def test_report_html_on_mutated_records(kind, data):
    doc = json.loads((DATA / RECORDS[kind]).read_text())
    _report(kind, json.dumps(mutate(doc, data)).encode(), "html")


@pytest.mark.parametrize("doc", [
    {"schema": "trainprof.run/1"},
    {"schema": "trainprof.analysis/1", "ranks": [{}]},
    {"schema": "trainprof.tune/1", "baseline": {"config": {}, "step_time_s": 1, "tokens_per_s": 1}, "trials": []},
    {"schema": "trainprof.ettr/1", "ettr": "high"},
])
def test_the_records_named_in_the_issue(tmp_path, doc):
    name = {"run": "run.json", "analysis": "analysis.json", "tune": "tune.json", "ettr": "ettr.json"}[
        doc["schema"].split(".")[1].split("/")[0]]
    (tmp_path / name).write_text(json.dumps(doc))
    rc, _, err = cli(["report", str(tmp_path), "--out", str(tmp_path / "o")])
    assert rc == 2 and str(tmp_path / name) in err
    one_error_line(rc, err)
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- journals
events = st.fixed_dictionaries({"event": st.sampled_from(["start", "step", "checkpoint_save", "checkpoint_load",
                                                          "eval", "end"]) | st.text(max_size=5)},
                               optional={"t": values | st.floats(0, 1e9), "step": values | st.integers(0, 100),
                                         "step_time_s": values | st.floats(0, 10), "duration_s": values})


@settings(max_examples=int(200 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events, min_size=1, max_size=8), st.booleans())
def test_ettr_on_fuzzed_journals(evs, torn):
    with tempfile.TemporaryDirectory() as d:
        text = "".join(json.dumps(e) + "\n" for e in evs)
        (Path(d) / "journal.jsonl").write_text(text[:-5] if torn else text)
        rc, _, err = cli(["ettr", d, "--json"])
        one_error_line(rc, err)


@settings(max_examples=int(200 * SCALE), deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["trial_id", "knob", "config", "ok", "tokens_per_s", "step_time_s",
                                                 "losses", "val_loss", "wall_s"]), values, max_size=9),
                max_size=4))
def test_tune_journal_on_fuzzed_entries(entries):
    from trainprof.tune.journal import Journal

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "journal.jsonl"
        p.write_text("".join(json.dumps(e) + "\n" for e in entries))
        try:
            Journal(p)
        except InputError as e:
            assert str(e).startswith(str(p)) and "\n" not in str(e)


@settings(max_examples=int(100 * SCALE), deadline=None)
@given(values)
def test_checkpoint_meta_on_fuzzed_documents(doc):
    from trainprof.workload import checkpoint

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / checkpoint.META).write_text(json.dumps(doc))
        try:
            checkpoint.meta(Path(d))
        except InputError as e:
            assert str(e).startswith(d) and "\n" not in str(e)


def test_report_fixtures_still_render(tmp_path):
    """The mutations start from records that render: a fixture that broke would make every
    fuzz example an error and prove nothing."""
    for kind, rel in RECORDS.items():
        shutil.copytree(DATA / Path(rel).parent, tmp_path / kind)
        rc, _, err = cli(["report", str(tmp_path / kind), "--format", "md"])
        assert rc == 0, err


# ----------------------------------------------------- bytes, and storms of tiny items (#45)
STORMS = [b"{}," * 400_000, b"[]," * 400_000, b'"",' * 400_000, b"0," * 600_000, b"[" * 300, b"\xff\xfe",
          b'"' + b"\\" * 1001, b"\n", b"NaN", b"1e999", b"-0", b"{" + b'"a":0,' * 200_000 + b'"a":0}']


def _splice(data, text: bytes) -> bytes:
    """`text` with a few byte-level edits: a storm planted at a random place, bytes cut out,
    a byte flipped."""
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        op = data.draw(st.integers(0, 2))
        if op == 0:
            text = text[:at] + data.draw(st.sampled_from(STORMS)) + text[at:]
        elif op == 1:
            text = text[:at] + text[at + data.draw(st.integers(1, 64)):]
        elif at < len(text):
            text = text[:at] + bytes([data.draw(st.integers(0, 255))]) + text[at + 1:]
    return text


@settings(max_examples=int(30 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_run_json_and_journal_bytes_mutated_exit_0_or_2_in_bounded_memory(data):
    """run.json for `report` and journal.jsonl lines for `ettr`, edited as bytes with storms of
    tiny items planted (a 1.2 MB `{}` storm costs 25x decoded): 0 or one line, and what reading
    takes stays under a stated multiple of the file (bounded.COST_FACTOR, plus the file)."""
    import tracemalloc

    from trainprof.bounded import COST_FACTOR

    with tempfile.TemporaryDirectory() as d:
        folder = Path(d) / "rec"
        shutil.copytree(DATA / "cpu_run", folder)
        if data.draw(st.booleans()):
            target, argv = folder / "run.json", ["report", str(folder), "--format", "md", "--out", str(Path(d) / "o")]
            target.write_bytes(_splice(data, target.read_bytes()))
        else:
            line = json.dumps({"event": "step", "t": 1.0, "step": 1, "step_time_s": 0.1}).encode() + b"\n"
            target, argv = folder / "journal.jsonl", ["ettr", str(folder), "--json"]
            target.write_bytes(b"".join(_splice(data, line) if data.draw(st.booleans()) else line
                                        for _ in range(data.draw(st.integers(1, 4)))))
        tracemalloc.start()
        try:
            rc, _, err = cli(argv)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        one_error_line(rc, err)
        size = target.stat().st_size
        assert peak < (COST_FACTOR + 1) * size + (16 << 20), (peak, size, err)
