import dataclasses

import pytest

from trainprof.cli import build_parser
from trainprof.errors import UsageError
from trainprof.flags import build
from trainprof.jobs.run_config import RunJob
from trainprof.workload.config import PRESETS, TrainConfig


def test_preset_defaults_fill_unset_knobs():
    cfg = TrainConfig(preset="gpt2-124m").resolved()
    assert (cfg.micro_batch, cfg.seq_len) == (8, 1024)
    assert cfg.model.n_layer == 12 and cfg.model.d_model == 768 and cfg.model.vocab_size == 50257
    assert cfg.tokens_per_step == 8 * 1024
    assert TrainConfig(preset="gpt2-124m", pad_vocab=True).model.vocab_size == 50304  # nanoGPT


def test_explicit_knobs_win():
    cfg = TrainConfig(micro_batch=3, seq_len=7, grad_accum=2).resolved()
    assert cfg.tokens_per_step == 42


@pytest.mark.parametrize("kw,flag", [
    ({"preset": "gpt5"}, "--preset"),
    ({"micro_batch": 0}, "--micro-batch"),
    ({"steps": -1}, "--steps"),
    ({"seq_len": 100_000}, "--seq-len"),
    ({"dtype": "fp8"}, "--dtype"),
    ({"optimizer": "sgd"}, "--optimizer"),
    ({"attention": "ring"}, "--attention"),
    ({"lr": 0.0}, "--lr"),
    ({"num_workers": -2}, "--num-workers"),
])
def test_validation_names_the_field_and_flag(kw, flag):
    # the API names the field's path (construction refuses it: __post_init__) ...
    (name,) = kw
    with pytest.raises(UsageError) as e:
        TrainConfig(**kw).resolved()
    assert str(e.value).startswith(f"train.{name} ") and e.value.exit_code == 2
    # ... and a command line names the flag: argparse refuses a Literal's non-choice, the
    # dataclass the rest, naming the path and the flag (trainprof/flags.py build)
    with pytest.raises(UsageError) as e:
        build(RunJob, build_parser().parse_args(["run", flag, str(kw[name])]))
    assert flag in str(e.value) and e.value.exit_code == 2
    if "invalid choice" not in str(e.value):
        assert str(e.value).startswith(f"train.{name} ({flag}) ")


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        TrainConfig().steps = 3  # type: ignore[misc]


def test_presets_have_the_published_shapes():
    shapes = {k: (m.n_layer, m.n_head, m.d_model) for k, m in PRESETS.items()}
    assert shapes["gpt2-350m"] == (24, 16, 1024) and shapes["gpt2-774m"] == (36, 20, 1280)
