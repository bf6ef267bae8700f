"""report/formatting.py: each kind of number has one formatter; hand-computed answers."""

from __future__ import annotations

import pytest
from msgspec import UNSET

from trainprof.report.figures import FORMATS
from trainprof.report.formatting import duration, pct_of_fraction, pct_value, signed_us, size


def test_duration_ladders():
    # profile: µs below 1 ms, ms below 10 s, then s; the same figure from µs or from s
    assert duration(999.94, "us") == "999.9 µs" and duration(1500, "us") == "1.5 ms"
    assert duration(1500, "us", ms_digits=2) == "1.50 ms" and duration(12_345_678, "us") == "12.35 s"
    assert duration(0.0015, "s") == duration(1500, "us") == FORMATS["s"](0.0015)
    # step: never µs; wall: seconds below 90 s, then minutes; plan: hours, days, years
    assert duration(0.0005, "s", "step") == "0.5 ms" and duration(12.5, "s", "step") == "12.50 s"
    assert duration(89.4, "s", "wall") == "89 s" and duration(210, "s", "wall") == "3.5 min"
    assert duration(7200, "s", "plan") == "2.0 hours" and duration(3 * 86400, "s", "plan") == "3.0 days"
    assert duration(2 * 365 * 86400, "s", "plan") == "2.0 years"
    assert duration(None, "us") == duration(UNSET, "s", "wall") == "—"
    with pytest.raises(ValueError, match="ladder 'minutes'"):
        duration(1.0, "s", "minutes")


def test_signed_us_and_size():
    assert signed_us(-1500) == "−1.5 ms" and signed_us(250) == "+250.0 µs" and signed_us(0) == "±0.0 µs"
    assert signed_us(1500, ms_digits=2) == "+1.50 ms" and signed_us(None) == "—"
    assert size(3 * 2**29) == "1.50 GiB" and size(2048) == "2.00 KiB" and size(512) == "512 B"
    assert size(1_500_000, si=True) == "1.5 MB" and size(999, si=True) == "999 B"


def test_a_fraction_and_a_percentage_are_two_names():
    assert pct_of_fraction(0.255) == "25.5%" == pct_value(25.5)
    assert pct_of_fraction(0.255, 0) == FORMATS["pct_of_fraction0"](0.255) == "26%"
    assert FORMATS["pct_value"](25.5) == "25.5%" and FORMATS["pct_value0"](25.5) == "26%"
    assert "pct" not in FORMATS and "frac" not in FORMATS  # the names that meant both
