"""GEMM shape search: candidates by hand, ranking, and a tiny real run."""

from trainprof.backends.cpu import CpuBackend
from trainprof.bench import shapes
from trainprof.bench.config import ShapesConfig


def test_ff_candidates_are_multiples_of_64_around_8h_over_3():
    # 8/3 · 768 = 2048 exactly
    assert shapes.ff_candidates(768, 2) == [1920, 1984, 2048, 2112, 2176]
    # 8/3 · 1000 = 2666.7: the raw 2667 plus multiples of 64 around 2688
    assert shapes.ff_candidates(1000, 1) == [2624, 2667, 2688, 2752]


def test_vocab_candidates_pad_to_8_64_128():
    assert shapes.vocab_candidates(50257) == [50257, 50264, 50304]  # 50304 = 64·786 = 128·393
    assert shapes.vocab_candidates(256) == [256]


def test_head_dims_divide_h():
    assert shapes.head_dim_candidates(768) == [32, 64, 96, 128, 256]
    assert shapes.head_dim_candidates(1000) == []


def test_candidate_flops():
    cfg = ShapesConfig(hidden=768, vocab=50257, tokens=512, seq_len=256).resolved("cpu")
    c = {(x["group"], x["value"]): x for x in shapes.candidates(cfg)}
    assert c["d_ff", 2048]["flops"] == 6 * 512 * 768 * 2048  # SwiGLU: 2·M·h·2d_ff + 2·M·d_ff·h
    assert c["vocab", 50304]["flops"] == 2 * 512 * 768 * 50304
    assert c["vocab", 50304]["useful_flops"] == 2 * 512 * 768 * 50257
    # attention: Q·Kᵀ + P·V over (M/T sequences × h/d heads): 4·(M/T)·T²·h whatever d
    for d in (32, 64, 128):
        assert c["head_dim", d]["flops"] == 4 * 2 * 256**2 * 768


def test_rank_orders_by_useful_tflops_within_a_group():
    rows = [{"group": "a", "useful_tflops": 1.0}, {"group": "a", "useful_tflops": 3.0},
            {"group": "b", "useful_tflops": 0.5}]
    shapes.rank(rows)
    assert [r["rank"] for r in rows] == [2, 1, 1]


def test_tiny_run():
    cfg = ShapesConfig(hidden=128, vocab=1000, tokens=64, seq_len=32, ff_steps=1, iters=3).resolved("cpu")
    out = shapes.run(cfg, CpuBackend())
    groups = [r["group"] for r in out["results"]]
    assert groups.count("d_ff") == 4 and groups.count("vocab") == 2  # 1000 is a multiple of 8; 1024 of 64 and 128
    assert set(out["best"]) == {"d_ff", "vocab", "head_dim"}
    assert all(r["tflops_median"] > 0 and r["rank"] >= 1 for r in out["results"])
