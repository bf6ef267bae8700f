"""MFU of compiled and checkpointed models under `trainprof profile` (issue #38 item 3): the
same MLP eager, compiled (dynamo + AOTAutograd through the aot_eager backend) and with its own
activation checkpointing counts the same model FLOPs; the checkpointed one's hardware FLOPs add
the recomputed forward, so HFU > MFU, both shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "profile_scripts" / "compiled_mlp.py"
pytestmark = pytest.mark.slow


def _profile(tmp_path: Path, name: str, *args: str) -> dict:
    out = tmp_path / name
    done = subprocess.run([sys.executable, "-m", "trainprof", "profile", "--warmup", "2", "--steps", "3",
                           "--profile-steps", "0", "--system-interval", "0", "--no-report", "--peak-tflops", "1",
                           "--out", str(out), "--", sys.executable, str(SCRIPT), *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRAINPROF_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((out / "run.json").read_text())


def test_compiled_and_checkpointed_count_the_eager_models_flops(tmp_path):
    eager = _profile(tmp_path, "eager")
    compiled = _profile(tmp_path, "compiled", "--compile", "aot_eager")
    ckpt = _profile(tmp_path, "ckpt", "--checkpoint")
    # by hand, 32 rows: Linear 64→256, 256→64, 64→8 forward 2·32·(64·256 + 256·64 + 64·8) = 2,129,920;
    # backward: weight grads of all three + input grads of the last two (x needs none) = 3,211,264
    forward = 2 * 32 * (64 * 256 + 256 * 64 + 64 * 8)
    backward = forward + 2 * 32 * (256 * 64 + 64 * 8)
    for r in (eager, compiled, ckpt):
        assert r["flops"]["model_flops_per_step"] == forward + backward == 5_341_184
        assert r["flops"]["parts_per_step"]["forward"] == forward and r["flops"]["parts_per_step"]["excluded"] == 0
    # non-reentrant checkpointing re-runs the block's first Linear only (torch stops early: the second's
    # output is not needed for backward): 2·32·64·256 = 1,048,576 recomputed, hardware work only
    assert ckpt["flops"]["parts_per_step"]["recompute"] == 1_048_576
    assert ckpt["flops"]["hardware_flops_per_step"] == 5_341_184 + 1_048_576
    s = ckpt["summary"]
    assert s["hfu"] / s["mfu"] == pytest.approx((5_341_184 + 1_048_576) / 5_341_184, rel=1e-9)
    assert eager["summary"]["hfu"] == eager["summary"]["mfu"]
