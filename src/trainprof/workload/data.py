"""The data pipeline: a real corpus with no download, byte-level tokens, a DataLoader.

Default corpus: the Python standard library's own `.py` sources on the machine running us
(found via `sysconfig`), ~30 MB of real text everywhere Python is. `--data PATH` takes a
text file or a folder of text files instead. Tokens are bytes (ids 0-255): the `tiny`
preset's vocabulary is exactly that; GPT-2 presets keep their 50257-row embedding (so the
compute is GPT-2's) but only use the first 256 ids, so their losses are not comparable to
GPT-2 BPE numbers.

Validation split: the text is cut into 64 KiB chunks and every 10th chunk is held out, so
train and validation come from the same mixture of files (a tail split would hold out
whichever modules sort last).
"""

from __future__ import annotations

import os
import random
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from trainprof.errors import InputError

CHUNK = 64 * 1024
VAL_EVERY = 10
DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # 16 MiB: ~0.1 s to read, plenty for short runs
_SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__", ".git"}


@dataclass(frozen=True)
class Corpus:
    train: torch.Tensor  # uint8 token ids
    val: torch.Tensor
    source: str  # what was read, for the run record
    n_files: int
    n_bytes: int


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _walk(root: Path, suffixes: tuple[str, ...] | None) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for f in sorted(filenames):
            if suffixes is None or f.endswith(suffixes):
                out.append(Path(dirpath) / f)
    return out


def _read_text_bytes(paths: list[Path], max_bytes: int) -> tuple[bytes, int]:
    parts, total, used = [], 0, 0
    for p in paths:
        try:
            b = p.read_bytes()
        except OSError:
            continue
        if not b or b"\x00" in b[:8192]:  # empty or binary: not text
            continue
        parts.append(b)
        total += len(b)
        used += 1
        if total >= max_bytes:
            break
    return b"\n".join(parts)[:max_bytes], used


def load_corpus(path: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Corpus:
    if path is None:
        root = stdlib_root()
        files = _walk(root, (".py",))
        random.Random(0).shuffle(files)  # a fixed mixture of modules, not just a-f
        source = f"python-stdlib-{sysconfig.get_python_version()}"
    else:
        p = Path(path)
        if not p.exists():
            raise InputError(f"--data {path}: no such file or folder")
        if p.is_dir():
            files = _walk(p, None)
            if not files:
                raise InputError(f"--data {path}: the folder holds no files")
        elif p.is_file():
            files = [p]
        else:
            raise InputError(f"--data {path}: not a regular file or folder")
        source = str(p)
    data, used = _read_text_bytes(files, max_bytes)
    if not data:
        raise InputError(f"--data {path or source}: no readable text (empty or binary files)")
    tokens = torch.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())
    chunks = tokens.split(CHUNK)
    val = [c for i, c in enumerate(chunks) if i % VAL_EVERY == VAL_EVERY - 1]
    train = [c for i, c in enumerate(chunks) if i % VAL_EVERY != VAL_EVERY - 1]
    if not val:  # under 10 chunks: hold out the last 10% instead
        cut = int(len(tokens) * 0.9)
        train, val = [tokens[:cut]], [tokens[cut:]]
    return Corpus(torch.cat(train), torch.cat(val), source, used, len(data))


class RandomWindows(Dataset):
    """Sample i is a window at a position drawn from a generator seeded by (seed, i):
    deterministic for any number of workers and independent of iteration order."""

    def __init__(self, tokens: torch.Tensor, seq_len: int, n_samples: int, seed: int, delay_s: float = 0.0) -> None:
        if len(tokens) < seq_len + 2:
            raise InputError(
                f"corpus split of {len(tokens)} tokens is too small for --seq-len {seq_len}"
            )
        self.tokens = tokens
        self.seq_len = seq_len
        self.n = n_samples
        self.seed = seed
        self.delay_s = delay_s  # a stand-in for decode/augment work (sleep: it does not compete for cores)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.delay_s:
            time.sleep(self.delay_s)
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        start = int(torch.randint(len(self.tokens) - self.seq_len - 1, (1,), generator=g))
        w = self.tokens[start : start + self.seq_len + 1].long()
        return w[:-1], w[1:]


def make_loader(
    tokens: torch.Tensor,
    *,
    seq_len: int,
    micro_batch: int,
    n_batches: int,
    seed: int,
    num_workers: int = 0,
    pin_memory: bool = False,
    delay_s: float = 0.0,
    dist: Any = None,
    start: int = 0,
) -> DataLoader:
    """Micro-batches `start` … `n_batches`−1; with `dist` (workload.parallel.DistInfo) each is
    one rank's slice of a global micro-batch of micro_batch × world_size samples. Batch i is
    the same whatever `start` is, which is what makes a resumed run exact."""
    world = dist.world_size if dist is not None else 1
    ds = RandomWindows(tokens, seq_len, n_batches * micro_batch * world, seed, delay_s)
    sampler: Any = range(start * micro_batch, n_batches * micro_batch) if start else None
    if dist is not None:
        from trainprof.workload.parallel import RankSlice

        sampler = RankSlice(n_batches, micro_batch, dist, start=start)
    return DataLoader(
        ds,
        batch_size=micro_batch,
        sampler=sampler,
        shuffle=False,  # randomness lives in the dataset's seeded offsets
        num_workers=num_workers,
        pin_memory=pin_memory,
        drop_last=True,
        persistent_workers=num_workers > 0,
        prefetch_factor=4 if num_workers > 0 else None,
        worker_init_fn=quiet_sigterm if num_workers > 0 else None,
    )


def quiet_sigterm(worker_id: int) -> None:  # noqa: ARG001 - DataLoader's worker_init_fn signature
    """A DataLoader worker dies of SIGTERM at once and silently. It is forked with the command's
    handler (cli.Terminated), which in a worker printed a traceback per worker on a SIGTERM to
    the process group (#45). A worker writes nothing, so it has nothing to clean up; the main
    process stops its workers itself on its way out (cli: SIGCHLD is left at default then, so
    torch's "DataLoader worker is killed by signal" does not cut the clean-up short)."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
