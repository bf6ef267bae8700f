"""Property-based fuzzing of the trace reader (issue #19): for any bytes, `read_trace` returns a
Trace or raises one InputError naming the file, and `trainprof analyze` exits 0, or 2 with
one line on stderr; never a traceback, never another exception.

Example counts are bounded (`max_examples`) so the whole file runs in a few seconds;
TRAINPROF_FUZZ_EXAMPLES=5000 runs a longer hunt (multiplies every count by it / 200).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainprof.cli import main
from trainprof.errors import InputError
from trainprof.trace import read_trace

DATA = Path(__file__).resolve().parents[1] / "data"
BASE = json.loads((DATA / "traces" / "idle_causes.json").read_text())
SCALE = int(os.environ.get("TRAINPROF_FUZZ_EXAMPLES", "200")) / 200
FAST = settings(max_examples=int(200 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])

# JSON values, control characters and lone surrogates' neighbours included
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids,
                                                                                           max_size=3), max_leaves=8)
FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp")


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _read(data: bytes, suffix: str = ".json") -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"t{suffix}"
        p.write_bytes(data)
        try:
            read_trace(p)
        except InputError as e:
            msg = str(e)
            assert msg.startswith(str(p)) and "\n" not in msg, msg


@FAST
@given(st.binary(max_size=600))
def test_any_bytes(data):
    _read(data)


@FAST
@given(st.binary(max_size=300))
def test_any_bytes_after_a_trace_prefix(tail):
    # past the first-byte check, into the prefix scanner and the event cutter
    _read(b'{"schemaVersion": 1, "traceEvents": [' + tail)
    _read(b"[" + tail)


@FAST
@given(st.data())
def test_mutated_real_events(data):
    events = [dict(e) for e in BASE["traceEvents"]]
    for _ in range(data.draw(st.integers(1, 4))):
        e = events[data.draw(st.integers(0, len(events) - 1))]
        field = data.draw(st.sampled_from(FIELDS))
        if data.draw(st.booleans()):
            e[field] = data.draw(values)
        else:
            e.pop(field, None)
    doc = {**BASE, "traceEvents": events}
    raw = json.dumps(doc).encode()
    cut = data.draw(st.one_of(st.none(), st.integers(0, len(raw))))
    raw = raw if cut is None else raw[:cut]
    _read(gzip.compress(raw) if data.draw(st.booleans()) else raw,
          ".json.gz" if data.draw(st.booleans()) else ".json")


@settings(max_examples=int(40 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_analyze_cli_on_mutated_traces(data):
    """Through the whole pipeline (links, steps, analysis, findings, terminal tables)."""
    events = [dict(e) for e in BASE["traceEvents"]]
    for _ in range(data.draw(st.integers(1, 3))):
        e = events[data.draw(st.integers(0, len(events) - 1))]
        e[data.draw(st.sampled_from(FIELDS))] = data.draw(values)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.json"
        p.write_text(json.dumps({**BASE, "traceEvents": events}))
        rc, _, err = cli(["analyze", str(p), "--peak-tflops", "100", "--peak-bandwidth-gbs", "1000"])
        assert rc in (0, 2), err
        if rc == 2:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("trainprof: error: "), err
