"""--step-marker lookup and wrapping, batch and dtype detection, the agent's options."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from trainprof.errors import ConfigError
from trainprof.inject import marker
from trainprof.inject.detect import batch_items, compute_dtype
from trainprof.inject.options import AgentConfig, ProfileOptions
from trainprof.options import MonitorOptions


@pytest.fixture
def fake_module(monkeypatch):
    mod = types.ModuleType("fake_train")

    def train_step(x):
        return x + 1

    class Trainer:
        def step(self, x):
            return x * 2

        @staticmethod
        def static_step(x):
            return x - 1

    mod.train_step, mod.Trainer = train_step, Trainer
    monkeypatch.setitem(sys.modules, "fake_train", mod)
    return mod


def test_marker_wraps_a_function_and_counts_only_returns(fake_module):
    owner, name, stored = marker.resolve("fake_train:train_step")
    assert owner is fake_module and name == "train_step"
    seen = []
    setattr(owner, name, marker.wrap(stored, lambda: seen.append(1)))
    assert fake_module.train_step(1) == 2 and seen == [1]
    with pytest.raises(TypeError):
        fake_module.train_step(None)  # raised: not a completed step
    assert seen == [1]


def test_marker_keeps_methods_and_staticmethods(fake_module):
    seen = []
    for q in ("Trainer.step", "Trainer.static_step"):
        owner, name, stored = marker.resolve(f"fake_train:{q}")
        setattr(owner, name, marker.wrap(stored, lambda q=q: seen.append(q)))
    t = fake_module.Trainer()
    assert t.step(3) == 6 and t.static_step(3) == 2 and fake_module.Trainer.static_step(5) == 4
    assert seen == ["Trainer.step", "Trainer.static_step", "Trainer.static_step"]  # each marker its own name


def test_marker_not_there_yet(fake_module):
    assert marker.resolve("fake_train:nope") is None
    assert marker.resolve("not_imported_anywhere:f") is None


def test_marker_names_the_script_by_its_file(monkeypatch):
    main = types.ModuleType("__main__")
    main.__file__ = "/somewhere/train.py"
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert marker.find_module("train") is main and marker.find_module("other") is None


def test_in_progress_sees_the_running_call():
    def outer():
        return marker.in_progress(outer)

    assert outer() is True and marker.in_progress(outer) is False


def test_batch_items_counts_tokens_or_samples():
    ids = torch.zeros(4, 16, dtype=torch.long)
    assert batch_items((), {"input_ids": ids, "labels": ids}) == (64, "tokens")  # HF: keywords
    assert batch_items((ids, ids), {}) == (64, "tokens")
    assert batch_items((torch.zeros(8, 3, 32, 32),), {}) == (8, "samples")  # images: the leading dim
    assert batch_items((), {}) is None


def test_dtype_from_autocast_else_parameters():
    w = torch.zeros(2, dtype=torch.bfloat16)
    assert compute_dtype("cpu", w) == ("bf16", "parameters")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert compute_dtype("cpu", torch.zeros(2)) == ("bf16", "autocast")
    assert compute_dtype("cpu", None) == ("fp32", "default")


def test_agent_config_travels_as_json():
    cfg = AgentConfig(ProfileOptions(steps=5, step_marker="t:f"), "/x/.parts", "/pkg", {"peak_tflops": 1.5},
                      pythonpath=None, parent_pid=7)
    assert AgentConfig.from_env(cfg.to_env()) == cfg


@pytest.mark.parametrize("opts, msg", [
    (dict(warmup=1), "profile.warmup must be ≥ 2"),
    (dict(steps=0), "profile.steps must be ≥ 1"),
    (dict(monitor=MonitorOptions(profile_steps=-1)), "profile.profile_steps must be ≥ 0"),
    (dict(step_marker="train.train_step"), "profile.step_marker must be MODULE:QUALNAME"),
    (dict(step_marker="train:"), "profile.step_marker must be MODULE:QUALNAME"),
    (dict(tokens_per_step=0), "profile.tokens_per_step must be ≥ 1"),
])
def test_bad_options_name_their_field(opts, msg):
    # refused on construction (a command line adds the flag: test_flags.py, test_cli_profile.py)
    with pytest.raises(ConfigError) as e:
        ProfileOptions(**opts)
    assert str(e.value).startswith(msg)
    assert ProfileOptions(step_marker="pkg.mod:Cls.meth").step_marker == "pkg.mod:Cls.meth"


def test_sequence_first_models_read_batch_from_the_second_dimension():
    from trainprof.inject.detect import batch_items, loader_settings, sequence_first

    lstm = torch.nn.LSTM(8, 8)  # batch_first=False: (T, B, I)
    assert sequence_first([torch.nn.Sequential(torch.nn.Embedding(10, 8), lstm)]) == "LSTM.batch_first=False"
    assert sequence_first([torch.nn.LSTM(8, 8, batch_first=True)]) is None
    assert sequence_first([torch.nn.Linear(8, 8)]) is None  # nothing declares a layout: batch-first
    enc = torch.nn.TransformerEncoderLayer(8, 2, batch_first=True)
    assert sequence_first([torch.nn.Sequential(enc, torch.nn.LSTM(8, 8))]) is None  # any batch-first: not swapped
    assert batch_items((torch.randn(35, 20, 8),), {}, batch_dim=1) == (20, "samples")
    assert batch_items((torch.zeros(35, 20, dtype=torch.long),), {}, batch_dim=1) == (700, "tokens")
    data = torch.utils.data.TensorDataset(torch.zeros(4))
    dl = torch.utils.data.DataLoader(data, batch_size=2, num_workers=3, pin_memory=True)
    assert loader_settings(dl) == {"class": "DataLoader", "num_workers": 3, "pin_memory": True,
                                   "persistent_workers": False, "prefetch_factor": 2, "batch_size": 2}
