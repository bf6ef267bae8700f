"""`trainprof analyze` stays light: no chart renderer (vl-convert, or matplotlib as before),
pandas or torch on its path (issue #16: importing matplotlib alone cost ~0.5 s of a 1.7-2.8 s
analysis; vl-convert's engine starts in ~0.7 s). Checked in a fresh
interpreter, since this test process has imported all of them already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "traces" / "real" / "hta_ddp_2rank_nccl_a100" / "nccl_data.json.gz"
HEAVY = ("matplotlib", "pandas", "torch", "vl_convert")
PROBE = """
import json, sys
from trainprof.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "heavy": sorted(m for m in sys.modules if m.split('.')[0] in %r)}), file=sys.stderr)
""" % (HEAVY,)


def _modules_after(*argv: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env,
                       timeout=300, check=False)
    return json.loads(r.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["out", "json"])
def test_analyze_imports_no_chart_renderer_pandas_or_torch(tmp_path, mode):
    argv = ["analyze", str(TRACE)] + (["--out", str(tmp_path / "o")] if mode == "out" else ["--json"])
    got = _modules_after(*argv)
    assert got["rc"] == 0
    assert got["heavy"] == [], got["heavy"]
    if mode == "out":
        assert (tmp_path / "o" / "report.html").stat().st_size > 500_000  # the charts' scripts are inline


@pytest.mark.slow  # a fresh interpreter that checks the probe itself
def test_the_probe_sees_an_import(tmp_path):
    """Control: the probe notices a heavy import made in its process. --plots draws roofline.png
    with vl-convert in a child process (report/plots._DRAW, issue #45: its engine's abort
    under `ulimit -v` must not take trainprof with it), so this one imports it itself."""
    trace = REPO / "tests" / "data" / "traces" / "real" / "tracelens_h100_hf_inference"
    files = sorted(trace.glob("*.json*"))
    got = _modules_after("analyze", str(files[0]), "--out", str(tmp_path / "o"), "--plots", "--no-report")
    assert got["rc"] == 0 and "vl_convert" not in got["heavy"] and (tmp_path / "o" / "roofline.png").exists()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-c", "import vl_convert\n" + PROBE, "--version"], capture_output=True,
                       text=True, env=env, timeout=300, check=False)
    assert "vl_convert" in json.loads(r.stderr.strip().splitlines()[-1])["heavy"]


# Start-up (issue #43): what `--version` and `analyze --help` may import. Each of these is needed
# only once a command runs: msgspec/record types (~11 ms), the spec table (TOML + RE2, ~13 ms),
# numpy (~60 ms), rich, jinja2, torch. Read from `python -X importtime` in a fresh interpreter.
NOT_AT_START = ("msgspec", "tomllib", "re2", "numpy", "rich", "jinja2", "torch", "trainprof.hardware.specs",
                "trainprof.recordtypes")


@pytest.mark.parametrize("argv", [["--version"], ["analyze", "--help"]])
def test_start_up_imports_nothing_heavy(argv):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "trainprof", *argv], capture_output=True,
                       text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0 and "trainprof" in r.stdout
    names = [line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")]
    assert "trainprof.cli" in names  # the probe reads the real import list
    heavy = sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in NOT_AT_START))
    assert heavy == [], heavy
