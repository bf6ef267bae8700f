"""The claims every analysed rank must keep (docs/critical-path.md, "Findings are claims"),
checked on one rank record of analysis.json (tests/integration/test_cli_analyze.py runs it on
every shipped trace, test_planted_whatif.py on the hand-written ones)."""

from __future__ import annotations

import pytest
from trainprof.vocab.idle import CAUSES

TOL = 1e-6


def check_rank(r: dict) -> None:
    ib, tb = r["idle_breakdown"], r["temporal_breakdown"]
    if ib.get("span_us") is not None:
        # idle causes add up to the idle time, which is the breakdown's own, ≤ its span
        assert sum(ib[f"{c}_us"] for c in CAUSES) == pytest.approx(ib["idle_us"], rel=1e-9, abs=TOL)
        assert (ib["idle_us"], ib["span_us"]) == (tb["idle_us"], tb["span_us"])
        assert ib["idle_us"] <= ib["span_us"] + TOL
    cp = r.get("critical_path") or {}
    for s in cp.get("steps") or []:  # the path's pieces add up to the step
        assert sum(s["share_us"].values()) == pytest.approx(s["length_us"], rel=1e-6, abs=TOL)
    for s in (r.get("whatif") or {}).get("scenarios") or []:
        assert s["violations"] == [], (s["label"], s["violations"])
        # physics: no standard scenario scales kernels, so none beats the busiest stream
        assert s["projected_step_us"] >= s["floor_us"] - 1e-3, s["label"]
        # a removal gains at most what it removes, and at most its bound
        gain_us = s["measured_step_us"] - s["projected_step_us"]
        assert gain_us <= s["removed_us"] + 1e-3, s["label"]
        # removing work never projects a slower step (issue #39)
        assert s["projected_step_us"] <= s["measured_step_us"] + 1e-3, s["label"]
        assert s["gain_pct"] <= s["bound_pct"] + 1e-2, s["label"]
    gains = {s["label"]: s["gain_pct"] for s in (r.get("whatif") or {}).get("scenarios") or []}
    for f in r.get("findings") or []:  # a finding's projection never exceeds its own bound
        if f.get("projected_gain_pct") is not None:
            assert f["projected_gain_pct"] <= f["estimated_gain_pct"] + 1e-2, f["id"]
            # and is its what-if's gain, the figure the what-if table shows (issue #39)
            from trainprof.diagnose.catalogue import scenarios
            assert f["projected_gain_pct"] == gains[scenarios()[f["id"]]], f["id"]
