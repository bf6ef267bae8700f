"""The reference GPT-2 workload: model, data pipeline, trainer with optimisation knobs."""

from trainprof.workload.config import PRESETS, ModelConfig, TrainConfig

__all__ = ["PRESETS", "ModelConfig", "TrainConfig"]
