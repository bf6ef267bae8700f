"""The names family of issue #45's fuzzers: text from a trace through every built-in pattern
(namematch: RE2 on a bounded prefix), the kernel classifier and the device-spec table.

  - semantics: on short ASCII names made of the patterns' own words, separators and
    brackets, each RE2 pattern finds a match exactly where Python's `re`, the engine the
    patterns were written for, does (RE2 replaced `re` in #45 to be linear; it must not also
    change what a pattern means);
  - any name: text of any code point (NUL, lone surrogates, brackets, backslashes) and long
    runs of one unit past namematch.MATCH_CHARS, as the issue's `"gemm_"` x 200,000 was: each
    pattern, the classifier and the spec table return, the class is one of the table's, and
    what lies past the bounded prefix changes nothing.

Bounded like the other files here (~2 s; TRAINPROF_FUZZ_EXAMPLES=5000 for a longer hunt);
that each pattern's cost grows linearly is timed in tests/unit/trace/test_name_patterns.py.
"""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.trace.test_name_patterns import PLANTED, _patterns
from trainprof import namematch
from trainprof.trace.classify import OTHER, classify_names, load_classes

SCALE = int(os.environ.get("TRAINPROF_FUZZ_EXAMPLES", "200")) / 200
BUDGET = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_patterns()  # imports every module that compiles a pattern for trace names: REGISTRY is complete
KC = load_classes()
PATTERNS = list({(p.pattern, p.ignorecase): p for p in namematch.REGISTRY}.values())
WORDS = sorted({w for p in PATTERNS for w in re.findall(r"[A-Za-z0-9]{2,}", p.pattern)})
UNITS = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(PLANTED),
    st.sampled_from(["_", " ", "::", "<", ">", "(", ")", "[", "]", ",", "#", "-", ".", "/", "\\", "$"]),
    st.text(alphabet="abcxyzABCXYZ0123456789_", max_size=4),
)


@settings(BUDGET, max_examples=int(150 * SCALE))
@given(st.lists(UNITS, max_size=12).map("".join))
def test_each_pattern_matches_where_python_re_does(name):
    for p in PATTERNS:
        theirs = re.compile(p.pattern, re.IGNORECASE if p.ignorecase else 0)
        assert bool(p.search(name)) == bool(theirs.search(name)), (p.pattern, name)


@settings(BUDGET, max_examples=int(40 * SCALE))
@given(
    head=st.text(max_size=40),
    unit=st.one_of(UNITS, st.text(min_size=1, max_size=3)),
    times=st.integers(0, 2 * namematch.MATCH_CHARS),
    tails=st.tuples(st.text(min_size=1, max_size=20), st.text(min_size=1, max_size=20)),
)
def test_any_name_is_matched_classified_and_cut(head, unit, times, tails):
    from trainprof.hardware.specs import load_specs

    name = (head + unit * times)[: namematch.MATCH_CHARS + 100]
    for p in PATTERNS:
        p.search(name)
    classes, _ = classify_names((name,), KC)
    assert classes[0] in {*KC.names, OTHER}
    load_specs().match(name)
    if len(name) >= namematch.MATCH_CHARS:  # past the prefix, nothing counts (a name of exactly it is whole)
        a, b = (name[: namematch.MATCH_CHARS] + t for t in tails)
        assert [bool(p.search(a)) for p in PATTERNS] == [bool(p.search(b)) for p in PATTERNS]
