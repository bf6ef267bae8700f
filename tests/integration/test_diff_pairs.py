"""A newcomer's before/after pairs get the right verdict from `trainprof diff` (issue #37, item 4).

Each side is a real `trainprof profile` folder of profile_scripts/before_after.py, changed the
way a newcomer changes their loop: (a) DataLoader workers for a slow `__getitem__` → faster,
the data wait first; (b) 4× the batch → faster per sample, whatever the step time did;
(c) `loss.item()` every step on CPU → no measurable change. The runs share the machine with
whatever else runs, so nothing here asserts a time: only verdicts whose margin the noise test
states (analysis/run/noise.py), and identities.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from trainprof.cli import main

SCRIPT = Path(__file__).parent / "profile_scripts" / "before_after.py"
# 80 measured steps: enough fast ones for a 10th percentile when most steps wait for a core; 2 traced
PROFILE = ["--warmup", "2", "--steps", "80", "--profile-steps", "2", "--stop-after"]
RUNS = {  # the script's flags for each side
    "plain": [], "batch64": ["--batch", "64"], "item": ["--item"],
    # 16 samples × 2 ms of sleep: ~32 ms of data wait per step with no worker; 4 workers load ahead
    "slow_loader": ["--item-sleep", "0.002"], "workers": ["--item-sleep", "0.002", "--workers", "4"]}

pytestmark = pytest.mark.slow  # runs the user's program in fresh processes


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):  # noqa: ANN001, ANN201
    """`get(name)`: the profile folder of RUNS[name], made on first use."""
    root = tmp_path_factory.mktemp("pairs")

    def get(name: str) -> Path:
        out = root / name
        if not out.exists():
            rc = main(["profile", *PROFILE, "--out", str(out), "--", sys.executable, str(SCRIPT), "--steps", "120",
                       *RUNS[name]])
            assert rc == 0, name
        return out

    return get


def _diff(base: Path, new: Path, capsys, tmp_path: Path) -> tuple[dict, str, str]:  # noqa: ANN001
    capsys.readouterr()
    out = tmp_path / f"{base.name}-{new.name}"
    assert main(["diff", str(base), str(new), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    with capsys.disabled():  # the figures, for the record (pytest -s): no time is asserted
        v = json.loads((out / "diff.json").read_text())["verdict"]
        print(f"\n{base.name} -> {new.name}: {v['call']} per {v['per']} {v['ratio']:.2f}x [{v['ci_low']:.2f}, "
              f"{v['ci_high']:.2f}] fast {v['fast_ratio']:.2f}x [{v['fast_ci_low']:.2f}, {v['fast_ci_high']:.2f}] "
              f"band {v['band']}")
    return json.loads((out / "diff.json").read_text()), printed, (out / "diff.md").read_text()


def test_workers_for_a_slow_loader_are_faster_and_the_data_wait_comes_first(profiled, capsys, tmp_path):
    d, printed, md = _diff(profiled("slow_loader"), profiled("workers"), capsys, tmp_path)
    v, split = d["verdict"], d["runs"]["split"]
    assert v["call"] == "faster" and v["per"] == "step" and min(v["fast_ci_low"], v["ratio"]) > 1 + v["band"]
    # 16 samples × 2 ms of sleep per step with no worker (≥ 32 ms); 4 workers load ahead
    assert split["data_s"]["base_us_per_step"] > 20_000 > split["data_s"]["new_us_per_step"]
    assert d["story"][0].startswith("data wait ")
    for text in (printed, md):  # the verdict, the split, the findings, then the operators
        at = [text.index(s) for s in ("faster", "data wait", "Step split", "Findings", "Operators")]
        assert at == sorted(at), text
    # right counts: one CPU trace on each side, no GPU work claimed
    assert d["base"]["traces"] == d["new"]["traces"] == 1 and "GPU work" not in printed
    # the findings' figures are the folders' own (analysis.json), field for field
    for side in ("base", "new"):
        own = json.loads((Path(d[side]["folder"]) / "analysis.json").read_text())
        for f in own["ranks"][0]["findings"]:
            fd = next(x for x in d["findings"] if x["id"] == f["id"])
            assert fd[f"{side}_gain_pct"] == f["estimated_gain_pct"]
            assert fd[f"{side}_projected_pct"] == f.get("projected_gain_pct")


def test_four_times_the_batch_is_faster_per_sample(profiled, capsys, tmp_path):
    d, printed, _ = _diff(profiled("plain"), profiled("batch64"), capsys, tmp_path)
    v, runs = d["verdict"], d["runs"]
    assert runs["base"]["units_per_step"] == 16 and runs["new"]["units_per_step"] == 64
    assert runs["base"]["unit"] == "samples"
    assert v["per"] == "sample" and v["call"] == "faster"
    # per sample = 4 × the step-time ratio: the step time alone would read a fraction of the gain
    assert v["ratio"] == pytest.approx(4 * runs["base"]["step_median_s"] / runs["new"]["step_median_s"], rel=1e-9)
    assert "faster per sample" in printed and "median step" in printed and "samples/s" in printed


def test_an_item_per_step_on_cpu_is_noise(profiled, capsys, tmp_path):
    d, printed, md = _diff(profiled("plain"), profiled("item"), capsys, tmp_path)
    v = d["verdict"]
    assert v["call"] == "noise" and v["per"] == "step"
    assert not v["fast_ci_low"] > 1 + v["band"] or not v["ratio"] > 1 + v["band"]  # the rule's "faster" fails
    assert not v["fast_ci_high"] < 1 / (1 + v["band"]) or not v["ratio"] < 1 / (1 + v["band"])  # and "slower"
    assert "no measurable change (noise)" in printed and "% CI" in printed and "% CI" in md
