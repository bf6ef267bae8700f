"""The fuzz job of issue #33: both reader paths, the record loader and the CLI's value
parsers on generated input, within a bounded time (~10 s here; TRAINPROF_FUZZ_EXAMPLES=5000
for a longer hunt, as the other files of tests/fuzz).

  - reader paths: a real trace padded past one 256 KB batch (so events go through the
    streaming cutter, the C scanner and msgspec, not only the tail) with nasty tokens
    planted anywhere or inside strings (lone surrogates, numbers beyond int64 and double,
    deep brackets, a boundary inside a string, invalid UTF-8, NUL), cut short or gzipped:
    the C and pure paths give the same Trace bit for bit, or the same one-line refusal;
  - records: a record with the same tokens planted, loaded as `report` loads it: a result
    or one line naming the file;
  - CLI values: --memory-limit, --scale, SOURCE URLs, --out places, --ray-address and
    --ray-start-timeout, printed commands: a value or a UsageError/InputError, never another
    exception; a printed command never holds a control character and pastes back to its argv.
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.trace.test_scanner import assert_same, read_both
from trainprof.errors import InputError, TrainprofError, UsageError

DATA = Path(__file__).resolve().parents[1] / "data"
SCALE = int(os.environ.get("TRAINPROF_FUZZ_EXAMPLES", "200")) / 200
BUDGET = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                                        HealthCheck.data_too_large])


def _padded() -> bytes:
    """idle_causes.json's events, then copies of its kernels until past 300 KB."""
    doc = json.loads((DATA / "traces" / "idle_causes.json").read_text())
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    pad = [{**kernels[i % len(kernels)], "ts": 10**7 + i} for i in range(1500)]
    return json.dumps({**doc, "traceEvents": doc["traceEvents"] + pad}, indent=1).encode()


BASE = _padded()
assert len(BASE) > 300_000
NASTY = [rb"\udc00", rb"\ud800", rb"\ud800x", rb"\ud83d\ude00", rb"\\udc00", b"1e999", b"-1e999",
         b"99999999999999999999", b'"99999999999999999999"', b"NaN", b"[" * 300 + b"]" * 300, b"}, {",
         b"\x00", b"\xff\xfe", b'"\\u0000"', b" " * 3000, b'\\"', b"\x1b[2J"]


@settings(BUDGET, max_examples=int(60 * SCALE))
@given(st.data())
def test_both_reader_paths_agree_on_mutants(tmp_path_factory, data):
    monkeypatch = pytest.MonkeyPatch()
    text = bytearray(BASE)
    for _ in range(data.draw(st.integers(1, 3))):
        token = data.draw(st.sampled_from(NASTY))
        if data.draw(st.integers(0, 4)):  # mostly just inside a string (a name, a key, a value): still JSON
            at = text.find(b': "', data.draw(st.integers(0, len(text) - 1))) + 3  # a string value's start
        else:  # anywhere: mostly broken JSON, which both paths must refuse with the same line
            at = data.draw(st.integers(0, len(text)))
        text[at:at] = token
    if data.draw(st.booleans()):  # a number field replaced
        key = data.draw(st.sampled_from([b'"pid": ', b'"tid": ', b'"ts": ', b'"dur": ', b'"External id": ']))
        at = text.find(key, data.draw(st.integers(0, len(text) - 1)))
        if at >= 0:
            end = at + len(key)
            stop = end + len(bytes(text[end:end + 30]).split(b",")[0].split(b"}")[0])
            text[end:stop] = data.draw(st.sampled_from([b"99999999999999999999", b"1e999", b'"0x1f"', b"-0", b"1e-400"]))
    if not data.draw(st.integers(0, 4)):
        del text[data.draw(st.integers(0, len(text))):]
    raw = gzip.compress(bytes(text), 1) if data.draw(st.booleans()) else bytes(text)
    p = tmp_path_factory.mktemp("fuzz") / "t.json"
    p.write_bytes(raw)
    try:
        fast, pure, _ = read_both(p, monkeypatch)  # refusals: the same line from both (asserted there)
    except InputError as e:
        assert str(e).startswith(str(p)) and "\n" not in str(e), e
        return
    finally:
        monkeypatch.undo()
    assert_same(fast, pure)


RECORD = (DATA / "reports" / "multi_rank" / "analysis.json").read_bytes()


@settings(BUDGET, max_examples=int(60 * SCALE))
@given(st.data())
def test_records_with_planted_tokens(tmp_path_factory, data):
    from trainprof.recordtypes.analysis import Analysis
    from trainprof.recordtypes.base import load

    text = bytearray(RECORD)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        text[at:at] = data.draw(st.sampled_from(NASTY + [b'"' + b"\\\\" * 5000 + b'"', b"{" * 5000]))
    p = tmp_path_factory.mktemp("rec") / "analysis.json"
    p.write_bytes(bytes(text))
    try:
        load(p, Analysis)
    except InputError as e:
        assert str(e).startswith(str(p)) and "\n" not in str(e), e


# ------------------------------------------------------------------------------- CLI values
WORDS = st.text(st.characters(codec="utf-8"), max_size=30)


@settings(BUDGET, max_examples=int(300 * SCALE))
@given(st.one_of(WORDS, st.from_regex(r"\s*[0-9.]{0,25}(e[+-]?[0-9]{0,12})?\s*[kKmMgGtTiIbB]{0,3}\s*", fullmatch=True)))
def test_memory_limit_parses_or_refuses(text):
    from trainprof.cli.memory import MAX_SIZE, parse_size

    try:
        assert 1 <= parse_size(text) <= MAX_SIZE
    except UsageError as e:
        assert str(e).startswith("--memory-limit "), e


@settings(BUDGET, max_examples=int(300 * SCALE))
@given(st.one_of(WORDS, st.tuples(st.sampled_from(["(a+)+$", "gemm", "(?i)nccl", r"(a)\1", "(?=x)", "[", "a{1000}"]),
                                  st.sampled_from(["0", "0.5", "100", "101", "1e16", "-1", "nan", "inf", "x"]))
                 .map("=".join)))
def test_scale_parses_or_refuses(text):
    from trainprof.analysis.graph.whatif import MAX_SCALE, parse_scale

    try:
        e = parse_scale(text)
        assert 0 <= e.factor <= MAX_SCALE
    except UsageError as err:
        assert str(err).startswith("--scale"), err


@settings(BUDGET, max_examples=int(300 * SCALE))
@given(st.one_of(WORDS, st.tuples(st.sampled_from(["zip", "tar", "s3", "memory", "reference", "file", "http", "a.b"]),
                                  WORDS).map("://".join), st.tuples(WORDS, WORDS).map("::".join)))
def test_sources_accept_only_known_protocols(text):
    from trainprof.jobs.sources import PROTOCOLS, check_protocol, is_url

    try:
        check_protocol(text)
    except InputError as e:
        assert str(e).startswith(f"{text}: ")  # (cli.main shows a newline in it as \x0a: one line)
        return
    assert "::" not in text or "://" not in text
    assert not is_url(text) or text.partition("://")[0].lower() in PROTOCOLS


@settings(BUDGET, max_examples=int(200 * SCALE))
@given(address=st.one_of(WORDS, st.tuples(st.sampled_from(["", "ray://"]), WORDS, st.integers(-5, 70000).map(str))
                         .map(lambda t: f"{t[0]}{t[1]}:{t[2]}")),
       timeout=st.floats(allow_nan=True, allow_infinity=True))
def test_ray_address_and_timeout_are_checked(address, timeout, monkeypatch):
    import socket

    from trainprof.jobs import engines

    def no_network(*a, **k):
        raise ConnectionRefusedError(111, "refused")

    monkeypatch.setattr(socket, "create_connection", no_network)  # the form is fuzzed here, not the network
    for call in (lambda: engines.check_address(address), lambda: engines.EngineConfig("ray", None, None, timeout)):
        try:
            call()
        except UsageError as e:
            # check_address names the flag; the dataclass names its field's path (flags.py adds the flag on a CLI)
            assert str(e).startswith(("--ray-address", "engine.ray_start_timeout_s ")), e


@settings(BUDGET, max_examples=int(300 * SCALE))
@given(st.lists(st.text(max_size=12), max_size=5))
def test_printed_commands_show_controls_and_paste_back(argv):
    from trainprof.controls import CONTROL, shell_join

    line = shell_join(argv)
    assert not CONTROL.search(line)
    if not any(CONTROL.search(a) for a in argv):
        assert shlex.split(line) == argv  # plain words: exactly shlex.join's line


@settings(BUDGET, max_examples=int(100 * SCALE))
@given(st.one_of(WORDS, st.sampled_from([".", "..", "/", "~", "./", "../..", "//", "/tmp/../"])))
def test_out_places_are_checked_without_error(text):
    from trainprof import owned

    try:
        owned.check_place(text)
    except TrainprofError as e:
        assert str(e).startswith(f"--out {text}: is "), e
    except ValueError:  # a NUL in a path: os refuses it before we could
        assert "\x00" in text
