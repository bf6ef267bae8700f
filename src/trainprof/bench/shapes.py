"""`bench shapes`: which GEMM shapes near a model's natural sizes run fastest here.

Three questions for a model of width h, each answered by timing the GEMMs it implies
(M = `tokens` rows = batch · sequence):
  d_ff     SwiGLU hidden size near 8/3·h (Shazeer 2020, "GLU Variants Improve Transformer":
           three matrices keep a 4h MLP's parameters when 3·h·d_ff = 8h², so d_ff = 8h/3;
           LLaMA rounds it up to a multiple of 256), as multiples of 64 around it plus
           the raw value; GEMMs: the fused gate+up projection [M,h]·[h,2·d_ff] and the
           down projection [M,d_ff]·[d_ff,h];
  vocab    the LM head [M,h]·[h,V] for V padded up to multiples of 8, 64 and 128 (nanoGPT
           pads GPT-2's 50257 to 50304 "for efficiency"); padding adds FLOPs that do no work, so
           this group is ranked by useful TFLOP/s (unpadded FLOPs / time), i.e. by time;
  head_dim attention's two batched GEMMs, Q·Kᵀ [T,d]·[d,T] and P·V [T,T]·[T,d], per head,
           for head dims d dividing h (the FLOPs are the same for every d: 4·B·T²·h).
Candidates are ranked by median TFLOP/s (the median is robust to a noisy neighbour; the
max is what `bench matmul` reports as a ceiling).
"""

from __future__ import annotations

from typing import Any

from trainprof.backends import DeviceBackend
from trainprof.bench import Progress
from trainprof.bench.config import ShapesConfig
from trainprof.bench.gemm import Gemm, make_gemm, matmul_precision
from trainprof.bench.matmul import l2_flusher
from trainprof.bench.timing import rates, summarize, time_calls

VERSION = 1
FF_MULTIPLE = 64
VOCAB_MULTIPLES = (8, 64, 128)
HEAD_DIMS = (32, 64, 80, 96, 128, 256)


def ff_candidates(h: int, steps: int, multiple: int = FF_MULTIPLE) -> list[int]:
    """Multiples of `multiple` within `steps` of 8/3·h, and 8/3·h itself rounded to an int."""
    target = 8 * h / 3
    base = round(target / multiple) * multiple
    out = {base + i * multiple for i in range(-steps, steps + 1)} | {round(target)}
    return sorted(d for d in out if d > 0)


def vocab_candidates(v: int, multiples: tuple[int, ...] = VOCAB_MULTIPLES) -> list[int]:
    return sorted({v} | {-(-v // m) * m for m in multiples})


def head_dim_candidates(h: int) -> list[int]:
    return [d for d in HEAD_DIMS if h % d == 0]


def candidates(cfg: ShapesConfig) -> list[dict[str, Any]]:
    """Each candidate: group, value, note, the GEMMs it runs and its useful FLOPs."""
    h, m, t = cfg.hidden, cfg.tokens, cfg.seq_len
    out: list[dict[str, Any]] = []
    target = 8 * h / 3
    for d in ff_candidates(h, cfg.ff_steps):
        note = "8/3·h" if d == round(target) else f"{d / target:.3f}×"
        if d % FF_MULTIPLE == 0:
            note += f", ×{FF_MULTIPLE}"
        out.append({"group": "d_ff", "value": d, "note": note,
                    "gemms": [(Gemm(m, 2 * d, h), "linear"), (Gemm(m, h, d), "linear")]})
    for v in vocab_candidates(cfg.vocab):
        mult = [str(k) for k in VOCAB_MULTIPLES if v % k == 0]
        note = "as given" if v == cfg.vocab else "×" + "/".join(mult)
        out.append({"group": "vocab", "value": v, "note": note,
                    "gemms": [(Gemm(m, v, h), "linear")], "useful_flops": Gemm(m, cfg.vocab, h).flops})
    for d in head_dim_candidates(h):
        bh = (m // t) * (h // d)  # sequences × heads
        out.append({"group": "head_dim", "value": d, "note": f"{h // d} heads",
                    "gemms": [(Gemm(t, t, d, batch=bh), "mm"), (Gemm(t, d, t, batch=bh), "mm")]})
    for c in out:
        c["flops"] = sum(g.flops for g, _ in c["gemms"])
        c.setdefault("useful_flops", c["flops"])
    return out


def run(cfg: ShapesConfig, backend: DeviceBackend, progress: Progress | None = None) -> dict[str, Any]:
    todo = candidates(cfg)
    flush = l2_flusher(backend)  # GPU: no candidate finds its operands in L2
    rows = []
    for i, c in enumerate(todo):
        if progress:
            progress(i, len(todo), f"{c['group']} {c['value']}")
        with matmul_precision(cfg.dtype):
            fns = [make_gemm(g, cfg.dtype, op, backend.device) for g, op in c["gemms"]]
            times = time_calls(lambda fns=fns: [f() for f in fns], backend, warmup=cfg.warmup,
                               iters=cfg.iters, budget_s=cfg.budget_s, flush=flush)
        fns = []  # the operands go before the next candidate allocates its own
        st = summarize(times)
        rows.append({"group": c["group"], "value": c["value"], "note": c["note"],
                     "gemms": " + ".join(g.label for g, _ in c["gemms"]), "dtype": cfg.dtype,
                     "flops": c["flops"], **st, **rates(c["flops"], st, 1e12, "tflops"),
                     "useful_tflops": c["useful_flops"] / st["median_s"] / 1e12})
    rank(rows)
    best = {r["group"]: r["value"] for r in rows if r["rank"] == 1}
    return {"results": rows, "best": best}


def rank(rows: list[dict[str, Any]]) -> None:
    """rank 1 = best within each group, by median useful TFLOP/s (= median TFLOP/s except
    for vocab, where padding FLOPs are not counted)."""
    for group in dict.fromkeys(r["group"] for r in rows):
        members = sorted((r for r in rows if r["group"] == group), key=lambda r: -r["useful_tflops"])
        for i, r in enumerate(members, 1):
            r["rank"] = i
