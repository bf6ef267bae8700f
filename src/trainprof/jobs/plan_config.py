"""`trainprof plan`'s configuration: the model (a preset, a Hugging Face config.json or flags),
the layout (analysis/plan/layout.Layout, flat), the device, the time question, the output.
Every flag of the command is one of these fields (trainprof/flags.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar
from decimal import Decimal, InvalidOperation

from trainprof.analysis.plan.layout import Layout
from trainprof.errors import ConfigError, UsageError
from trainprof.flags import option, section
from trainprof.jobs.memory_config import parse_size
from trainprof.options import OutputOptions

DEFAULT_DEVICE = "h100-sxm"
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_COUNT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(e[+-]?\d{1,3})?\s*([kmbgt]?)\s*$", re.IGNORECASE)
MAX_COUNT = 10**18


def parse_count(text: str, flag: str = "--params") -> int:
    """'175e9', '7B', '1.5T', '300e9', '124439808' → an integer count (K/M/B/T powers of 1000)."""
    m = _COUNT.match(text)
    if not m:
        raise UsageError(f"{flag} {text[:40]!r}: expected a count such as 7B, 175e9 or 300e9")
    try:
        v = Decimal(m.group(1) + (m.group(2) or "")) * _SCALE[m.group(3).lower()]
    except InvalidOperation:
        raise UsageError(f"{flag} {text[:40]!r}: expected a count such as 7B, 175e9 or 300e9") from None
    if not 1 <= v <= MAX_COUNT:
        raise UsageError(f"{flag} {text[:40]!r}: must be from 1 to 1e18")
    return int(v)


MODEL = "model (one of --preset, --config, or --layers/--hidden/--heads/--vocab)"


@dataclass(frozen=True)
class ModelFlags:
    """Where the model's shape comes from."""

    PATH = "model"

    preset: str | None = option(None, metavar="NAME")
    """a built-in preset: tiny, gpt2-124m, gpt2-350m, gpt2-774m"""
    config: str | None = option(None, metavar="CONFIG.JSON")
    """a Hugging Face config.json (read locally; nothing is downloaded)"""
    params: int | None = option(None, parse=parse_count, metavar="N")
    """parameter count (e.g. 7B, 175e9); overrides the count from the shape"""
    layers: int | None = None
    """transformer blocks"""
    hidden: int | None = None
    """model width (hidden size)"""
    heads: int | None = None
    """attention heads"""
    kv_heads: int | None = None
    """key/value heads (grouped-query attention; default: --heads)"""
    vocab: int | None = None
    """vocabulary size"""
    context: int | None = None
    """maximum sequence length (default: --seq-len, else 2048)"""
    ffn: int | None = None
    """MLP hidden width (default 4 × --hidden)"""
    gated: bool = False
    """a gated MLP (SwiGLU, as LLaMA)"""
    dropout: bool = False
    """dropout in the blocks (masks kept for backward)"""

    def __post_init__(self) -> None:
        for f in ("layers", "hidden", "heads", "kv_heads", "vocab", "context", "ffn"):
            v = getattr(self, f)
            if v is not None and v < 1:
                raise ConfigError(f, "must be ≥ 1", owner=self.PATH, got=v)
        if self.preset is not None and self.config is not None:
            raise UsageError("plan: give --preset or --config, not both")


@dataclass(frozen=True)
class PlanJob:
    """`trainprof plan`'s configuration."""

    PATH: ClassVar[str] = "plan"

    model: ModelFlags = section(ModelFlags(), flat=True, group=MODEL)
    """the model"""
    layout: Layout = section(Layout(), flat=True, group="layout (per GPU)")
    """how it is split and trained"""
    device: str = option(DEFAULT_DEVICE, metavar="KEY", group="device")
    """a row of the spec table (`trainprof specs`): its memory and dense peak"""
    memory: int | None = option(None, parse=parse_size, metavar="SIZE", group="device")
    """device memory to plan against instead of the spec table's (e.g. 24GiB, 80GB)"""
    gpus: int | None = option(None, metavar="N", group="device")
    """GPUs for the table of layouts that fit (default: dp × tp × pp)"""
    cuda_context: int | None = option(None, parse=parse_size, metavar="SIZE", group="device")
    """CUDA context and kernels per GPU (default 1,343 MB, the HF anatomy guide's measurement: docs/memory.md)"""
    nccl_buffers: int | None = option(None, parse=parse_size, metavar="SIZE", group="device")
    """NCCL buffers per communicator (default: docs/memory.md)"""
    layouts: bool = option(True, group="device")
    """list the layouts of the same GPUs that fit, cheapest first"""
    tokens: int | None = option(None, parse=parse_count, metavar="N", group="time to train")
    """tokens to train on (e.g. 300e9): adds the time to train"""
    mfu: float | None = option(None, metavar="F", group="time to train")
    """model FLOPs utilisation to assume, 0-1 (e.g. 0.4)"""
    mfu_from: str | None = option(None, metavar="RUN", group="time to train")
    """take the MFU measured by `trainprof run`/`profile` (its folder or run.json)"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "force", "json"), group="output", helps={
        "out": "folder to write plan.json in (default: nothing written)",
        "json": "print plan.json to stdout instead of tables"})
    """where plan.json goes"""

    def __post_init__(self) -> None:
        if self.mfu is not None and not 0 < self.mfu <= 1:
            raise ConfigError("mfu", "must be in (0, 1]", got=self.mfu)
        if self.mfu is not None and self.mfu_from is not None:
            raise UsageError("plan: give --mfu or --mfu-from, not both")
        if self.tokens is not None and self.mfu is None and self.mfu_from is None:
            raise UsageError("plan: --tokens needs an MFU: --mfu F (e.g. 0.4) or --mfu-from RUN (measured)")
        if self.gpus is not None and self.gpus < 1:
            raise ConfigError("gpus", "must be ≥ 1", got=self.gpus)
