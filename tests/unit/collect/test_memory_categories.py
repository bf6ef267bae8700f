"""The memory profiler's categories on real CPU training steps: parameters, AdamW state and
gradients are exactly 4, 8 and 4 bytes per fp32 parameter."""

import json

import msgspec
import pytest
import torch

from trainprof.collect.memory_snapshot import by_category
from trainprof.recordtypes.run_parts import MemorySnapshot
from trainprof.workload.config import PRESETS
from trainprof.workload.model import GPT


def test_categories_of_a_tiny_training_step_by_hand():
    torch.manual_seed(0)
    model = GPT(PRESETS["tiny"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 256, (2, 32))

    def step():
        model(x, x).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # AdamW creates its states on the first step: they pre-exist in the recorded one
    n = sum(p.numel() for p in model.parameters())
    r = by_category(step, "cpu")
    assert "unavailable" not in r, r
    assert r["at_peak"]["parameters"] == 4 * n
    # exp_avg + exp_avg_sq per element, and one fp32 `step` counter per parameter tensor
    assert r["at_peak"]["optimizer_state"] == 8 * n + 4 * len(list(model.parameters()))
    assert r["max"]["gradients"] == 4 * n
    assert r["max"]["activations"] > 0 and r["peak_bytes"] >= 16 * n


class SnapshotBackend:
    """The CUDA backend's snapshot methods, scripted; the steps themselves run on CPU."""

    device = "cpu"

    def __init__(self):
        self.calls = []

    def start_memory_history(self, n):
        self.calls.append(("start", n))

    def stop_memory_history(self):
        self.calls.append(("stop",))

    def reset_peak_memory(self):
        pass

    def memory_snapshot(self):
        return {"segments": [{"total_size": 100, "allocated_size": 75,
                              "blocks": [{"size": 75, "state": "active_allocated"}, {"size": 25, "state": "inactive"}]}]}

    def allocator_stats(self):
        return {"reserved_bytes.all.peak": 200, "allocated_bytes.all.peak": 150}


def test_snapshot_steps_saves_the_pickle_atomically_and_summarises(tmp_path):
    import pickle

    from trainprof.collect.memory_snapshot import FILE, MAX_ENTRIES, snapshot_steps

    backend = SnapshotBackend()
    w = torch.zeros(1000, requires_grad=True)
    r = snapshot_steps(lambda: (w * 2).sum().backward(), backend, tmp_path)
    assert backend.calls == [("start", MAX_ENTRIES), ("stop",)]
    assert r["file"] == FILE and pickle.loads((tmp_path / FILE).read_bytes())["segments"][0]["total_size"] == 100
    assert [p.name for p in tmp_path.iterdir()] == [FILE]  # no temp file left behind
    assert r["fragmentation"]["fragmentation"] == 0.25
    assert r["allocator"]["peak_unused_reserved_fraction"] == 0.25
    assert r["categories"]["max"]["gradients"] == 4000
    # run.json's typed block encodes the writer's dict back key for key (recordtypes/run_parts.py)
    assert json.dumps(msgspec.to_builtins(msgspec.convert(r, MemorySnapshot))) == json.dumps(r)


def test_history_is_stopped_when_a_step_fails(tmp_path):
    from trainprof.collect.memory_snapshot import snapshot_steps

    backend = SnapshotBackend()

    def boom():
        raise RuntimeError("step failed")

    with pytest.raises(RuntimeError, match="step failed"):
        snapshot_steps(boom, backend, tmp_path)
    assert backend.calls[-1] == ("stop",) and not any(tmp_path.iterdir())
