"""trainprof.trace must work on a machine without torch (analyse anywhere)."""

import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"

_PROBE = """
import sys
sys.modules["torch"] = None  # any `import torch` now raises ImportError
from trainprof.trace import find_steps, link, read_trace
tr = read_trace(sys.argv[1])
print(len(tr), find_steps(tr, link(tr)).number.tolist())
"""


def test_reader_links_and_steps_without_torch():
    out = subprocess.run([sys.executable, "-c", _PROBE, str(DATA / "two_steps.json")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["14", "[3,", "4]"]
