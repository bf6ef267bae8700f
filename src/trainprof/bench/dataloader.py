"""`bench dataloader`: throughput of the reference data pipeline over num_workers × pin_memory.

The pipeline is exactly `trainprof run`'s (workload/data: `load_corpus` → `make_loader`).
The first batch is timed apart (`first_batch_s`: worker start-up, prefetch); batches/s
and tokens/s are over the remaining batches, the steady state a training loop sees. The
loader alone is timed: no model, so this is the most the input can feed.
"""

from __future__ import annotations

import statistics
from typing import Any

from trainprof.backends import DeviceBackend
from trainprof.bench import Progress
from trainprof.bench.config import DataloaderConfig

VERSION = 1


def cases(cfg: DataloaderConfig) -> list[tuple[int, bool]]:
    return [(w, p) for w in cfg.workers for p in cfg.pin_memory]


def run(cfg: DataloaderConfig, backend: DeviceBackend, progress: Progress | None = None) -> dict[str, Any]:
    from trainprof.workload.data import load_corpus, make_loader

    corpus = load_corpus(cfg.data)
    todo = cases(cfg)
    clock = backend.host_clock
    rows = []
    for i, (workers, pin) in enumerate(todo):
        if progress:
            progress(i, len(todo), f"workers {workers}, pin_memory {'on' if pin else 'off'}")
        loader = make_loader(corpus.train, seq_len=cfg.seq_len, micro_batch=cfg.micro_batch,
                             n_batches=cfg.batches, seed=0, num_workers=workers, pin_memory=pin)
        t0 = clock()
        it = iter(loader)
        next(it)
        t1 = prev = clock()
        gaps = []
        for _ in it:
            now = clock()
            gaps.append(now - prev)
            prev = now
        del it, loader  # shuts the workers down before the next configuration starts its own
        steady = prev - t1
        n = len(gaps)
        tokens = n * cfg.micro_batch * cfg.seq_len
        rows.append({"num_workers": workers, "pin_memory": pin, "batches": n + 1,
                     "micro_batch": cfg.micro_batch, "seq_len": cfg.seq_len,
                     "first_batch_s": t1 - t0, "steady_s": steady,
                     "median_batch_s": statistics.median(gaps),
                     "batches_per_s": n / steady, "tokens_per_s": tokens / steady})
    best = max(rows, key=lambda r: r["batches_per_s"])
    return {"results": rows, "corpus": {"source": corpus.source, "bytes": corpus.n_bytes},
            "best": {"num_workers": best["num_workers"], "pin_memory": best["pin_memory"],
                     "tokens_per_s": best["tokens_per_s"]}}
