"""The planner's arithmetic (analysis/plan/), each figure worked by hand or beside a published one."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from trainprof.analysis.plan.layout import Layout
from trainprof.analysis.plan.memory import Runtime, bytes_per_param, layer_terms, plan_memory, state_bytes
from trainprof.analysis.plan.search import layouts_that_fit, max_micro_batch
from trainprof.analysis.plan.shape import ModelShape, from_hf_config
from trainprof.analysis.plan.time import time_to_train
from trainprof.analysis.run.memory import MemoryInputs, breakdown, gpt_param_count
from trainprof.errors import ConfigError, UsageError

GPT3 = ModelShape(n_layer=96, d_model=12288, n_head=96, vocab_size=50257, context_len=2048, params=175_000_000_000)
TINY = ModelShape(n_layer=4, d_model=256, n_head=4, vocab_size=256, context_len=256)
GB = 10**9


def _states(st: dict) -> int:
    return st["weights"] + st["weights_16bit"] + st["grads"] + st["master_weights"] + st["optimizer_states"]


def test_gpt3_model_states_are_the_seeds_2100_gb():
    # seed 003: fp32 weights 4 B × 175e9 = 700 GB; Adam's two moments twice that: 2,100 GB with them
    st = state_bytes(GPT3, Layout(dtype="fp32"))
    assert st["weights"] == 700 * GB
    assert st["weights"] + st["optimizer_states"] == 2_100 * GB
    assert st["grads"] == 700 * GB  # the seed leaves gradients out ("not even the dynamic memory")


def test_mixed_precision_adamw_is_the_seeds_18_bytes_per_param():
    # seed 001: fp32 weights 4 + 16-bit copy 2 + fp32 grads 4 + AdamW 8 = 18. The copy covers the
    # matmul weights and linear biases only, not norms or the position table (786,432 of GPT-2's
    # 124,439,808 params, 0.63%): 18 − 2 × 0.0066 = 17.987
    g = ModelShape(n_layer=12, d_model=768, n_head=12, vocab_size=50257, context_len=1024)
    assert bytes_per_param(g, Layout(dtype="bf16")) == pytest.approx(18, abs=0.015)
    assert bytes_per_param(g, Layout(dtype="fp32")) == 16
    assert bytes_per_param(g, Layout(dtype="bf16", zero=1)) == 16  # ZeRO's 2 + 2 + 12
    assert bytes_per_param(g, Layout(dtype="fp32", optimizer="adamw8bit")) == 10  # 4 + 4 + 2
    assert bytes_per_param(g, Layout(dtype="fp32", optimizer="sgd")) == 12  # 4 + 4 + momentum 4


@pytest.mark.parametrize("zero,published_gb", [(1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_stages_on_a_7_5b_model_match_the_zero_paper(zero, published_gb):
    # Rajbhandari et al. 2020, Figure 1: Ψ = 7.5B, K = 12, Nd = 64. Baseline (2 + 2 + K)Ψ = 120 GB;
    # P_os 2Ψ + 2Ψ + KΨ/Nd = 31.4 GB; P_os+g 2Ψ + (2 + K)Ψ/Nd = 16.6 GB; P_os+g+p (2 + 2 + K)Ψ/Nd = 1.9 GB
    m = replace(GPT3, params=7_500_000_000)
    assert _states(state_bytes(m, Layout(dtype="bf16", zero=1))) == 120 * GB
    got = _states(state_bytes(m, Layout(dtype="bf16", zero=zero, dp=64))) / GB
    assert got == pytest.approx(published_gb, abs=0.05)


def test_offload_moves_states_to_the_host_and_fsdp_shards_all_three():
    m = replace(GPT3, params=64_000_000)
    # FSDP over 8: fp32 weights, grads, AdamW 16 B/param ÷ 8 = 2 B/param; nothing autocast-cached
    assert _states(state_bytes(m, Layout(dtype="bf16", fsdp=True, dp=8))) == 2 * 64_000_000
    st = state_bytes(m, Layout(dtype="bf16", zero=2, dp=8, offload="optimizer"))
    # GPU: 16-bit weights 2 + 16-bit grads 2/8; host: fp32 master 4/8 + AdamW 8/8 + fp32 grads 4/8
    assert _states(st) == 64_000_000 * 2 + 64_000_000 * 2 // 8
    assert st["host_master_weights"] + st["host_optimizer_states"] + st["host_grads"] == 64_000_000 * 16 // 8
    assert _states(state_bytes(m, Layout(dtype="bf16", zero=3, dp=8, offload="params"))) == 0
    with pytest.raises(ConfigError):
        Layout(offload="optimizer")  # ZeRO-Offload needs ZeRO


# Korthikanti et al. 2022 with s = 2048, b = 1, h = 12288, a = 96 (GPT-3), t = 8, 16-bit, dropout,
# eager attention. Their count leaves out LayerNorm statistics and the causal mask (ours: extra terms).
S, B, H, A, T = 2048, 1, 12288, 96, 8
DROP = replace(GPT3, dropout=True, params=0)


def _korthikanti(lay: Layout) -> int:
    terms = layer_terms(DROP, lay, S, B)
    return sum(v for k, v in terms.items() if k not in ("norm_stats", "attn_mask"))


def test_activation_formulas_of_korthikanti():
    base = Layout(dtype="bf16", zero=1, attention="eager")  # 16-bit residual stream, as Megatron
    sbh = S * B * H
    assert _korthikanti(base) == 34 * sbh + 5 * A * S * S * B  # eq. (1)
    tp = replace(base, tp=T, sequence_parallel=False)
    assert _korthikanti(tp) == 10 * sbh + 24 * sbh // T + 5 * A * S * S * B // T  # eq. (2)
    sp = replace(base, tp=T)
    assert _korthikanti(sp) == (34 * sbh + 5 * A * S * S * B) // T  # eq. (4)
    sel = replace(sp, recompute="selective")
    assert _korthikanti(sel) == 34 * sbh // T  # §5, selective recompute with TP + SP
    # selective recompute drops 5as/h of 34 + 5as/h: for GPT-3 (5·96·2048/12288 = 80) 70% of a layer
    assert 1 - _korthikanti(sel) / _korthikanti(sp) == pytest.approx(80 / 114)
    # flash attention never keeps the scores: selective recompute has nothing left to drop
    flash = replace(sp, attention="flash")
    assert layer_terms(DROP, flash, S, B) == layer_terms(DROP, replace(flash, recompute="selective"), S, B)


def test_full_recompute_keeps_the_block_inputs():
    lay = Layout(dtype="bf16", zero=1, recompute="full", micro_batch=B, seq_len=S)
    pm = plan_memory(DROP, lay)
    one_layer = sum(layer_terms(DROP, lay, S, B).values())
    assert pm["activations"]["blocks"] == 96 * 2 * S * B * H + one_layer  # 2·s·b·h·L + one rebuilt block


def test_pipeline_first_stage_holds_the_activations_of_all_layers():
    # 1F1B, pp = 8, 8+ micro-batches: stage 0 keeps 8 in flight × 12 layers = 96 layers' worth (§4.2.3)
    lay = Layout(dtype="bf16", zero=1, pp=8, grad_accum=16, micro_batch=1, seq_len=S)
    pm = plan_memory(DROP, lay)
    assert pm["activations"]["blocks"] == 96 * pm["activations"]["per_layer"]
    few = plan_memory(DROP, replace(lay, grad_accum=2))
    assert few["activations"]["blocks"] == 2 * 12 * few["activations"]["per_layer"]


@pytest.mark.parametrize("dtype,attention,ckpt,accum", itertools.product(("fp32", "bf16"), ("sdpa", "manual"),
                                                                          (False, True), (1, 4)))
def test_the_planner_is_the_memory_commands_breakdown_for_our_gpt(dtype, attention, ckpt, accum):
    # one layout (one CPU process, autocast, foreach AdamW) where both estimates apply: the same bytes
    lay = Layout(dtype=dtype, attention="flash" if attention == "sdpa" else "eager",
                 recompute="full" if ckpt else "none", grad_accum=accum, micro_batch=16, seq_len=256)
    bd = breakdown(MemoryInputs(n_layer=4, n_head=4, d_model=256, vocab_size=256, context_len=256, micro_batch=16,
                                seq_len=256, dtype=dtype, attention=attention, checkpointing=ckpt, grad_accum=accum,
                                device_kind="cpu"))
    assert plan_memory(TINY, lay, Runtime(device_kind="cpu"))["peak_bytes"] == bd["peak_bytes"]


LLAMA2_7B = {  # meta-llama/Llama-2-7b-hf config.json (the keys the planner reads)
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "hidden_act": "silu", "rope_theta": 10000.0}
GPT2_HF = {"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257,
           "n_positions": 1024, "n_inner": None, "activation_function": "gelu_new", "resid_pdrop": 0.1}


def test_hugging_face_configs_give_the_published_parameter_counts():
    llama = from_hf_config(LLAMA2_7B)
    # per block 4·4096² + 3·4096·11008 + 2·4096 = 202,383,360; × 32 + 2 × 32000·4096 + 4096
    assert llama.param_count() == 6_738_415_616  # Llama-2-7b's count
    assert llama.gated and not llama.tied and not llama.learned_positions and llama.rmsnorm
    gpt2 = from_hf_config(GPT2_HF)
    assert gpt2.param_count() == gpt_param_count(12, 768, 50257, 1024) == 124_439_808
    assert gpt2.dropout and not gpt2.gated
    with pytest.raises(UsageError, match="mixture-of-experts"):
        from_hf_config({**LLAMA2_7B, "num_local_experts": 8})
    with pytest.raises(UsageError, match="hidden_size"):
        from_hf_config({k: v for k, v in LLAMA2_7B.items() if k != "hidden_size"})


def test_a_7b_model_by_hand():
    # Llama-2-7B, bf16 AdamW under DDP: 16 B × 6,738,415,616 = 107.81 GB, plus the 16-bit copy of the
    # matmul weights, 2 B × (6,738,415,616 − the 131,072,000-entry token table − 65 norms × 4096)
    # = 13.21 GB: 121.03 GB, over one 80 GB GPU. ZeRO-3 over 8 GPUs: 16 B/param ÷ 8 = 13.48 GB
    # (the ZeRO paper's (2 + 2 + K)Ψ/Nd, checked on its own 7.5B figure above)
    llama = from_hf_config(LLAMA2_7B)
    assert _states(state_bytes(llama, Layout(dtype="bf16"))) / GB == pytest.approx(121.03, abs=0.01)
    assert _states(state_bytes(llama, Layout(dtype="bf16", zero=3, dp=8))) / GB == pytest.approx(13.48, abs=0.01)


def test_largest_micro_batch_is_the_last_that_fits():
    rt = Runtime(context_bytes=500 * 2**20)
    cap = 80 * GB
    lay = Layout(dtype="bf16", micro_batch=1, seq_len=1024)
    g = ModelShape(n_layer=12, d_model=768, n_head=12, vocab_size=50257, context_len=1024)
    b = max_micro_batch(g, lay, rt, cap)
    assert b > 1
    assert plan_memory(g, replace(lay, micro_batch=b), rt)["peak_bytes"] <= cap
    assert plan_memory(g, replace(lay, micro_batch=b + 1), rt)["peak_bytes"] > cap
    assert max_micro_batch(GPT3, lay, rt, cap) == 0  # 175B on one GPU: nothing fits


def test_layouts_that_fit_fit_and_come_cheapest_first():
    rt = Runtime(context_bytes=500 * 2**20, nccl_bytes_per_group=256 * 2**20)
    base = Layout(dtype="bf16", micro_batch=1, seq_len=2048, grad_accum=8)
    rows = layouts_that_fit(GPT3, base, 64, rt, 80 * GB, limit=1000)
    assert rows, "175B fits 64 × 80 GB in some layout"
    for r in rows:
        assert r["peak_bytes"] <= 80 * GB and r["layout"].gpus == 64 and r["max_micro_batch"] >= 1
    keys = [(r["cost"]["offload"], round(r["cost"]["slowdown"], 6)) for r in rows]
    assert keys == sorted(keys)
    assert not any(r["layout"].dp == 64 and not r["layout"].sharded for r in rows)  # plain DDP: 2.8 TB per GPU


def test_seed_003_gpt3_on_one_v100_takes_centuries():
    # Lambda (seed 003's source): 3.14e23 FLOPs = 6 · 175e9 · 300e9 at 28 TFLOP/s = 355 GPU-years.
    # 28 of the V100's 125 dense fp16 TFLOP/s is an MFU of 0.224
    t = time_to_train(GPT3, tokens=300e9, seq_len=2048, gpus=1, peak_tflops=125, mfu=28 / 125)
    six_n_years = t["six_n_flops_per_token"] * 300e9 / 28e12 / (365 * 86400)
    assert six_n_years == pytest.approx(355, rel=0.01)
    # with attention's 12·L·h·s (PaLM) on top: +2.8%, the same order of magnitude
    assert 355 < t["gpu_years"] < 380
    assert t["gpu_years"] == pytest.approx(t["seconds"] / (365 * 86400))
    eight = time_to_train(GPT3, tokens=300e9, seq_len=2048, gpus=8, peak_tflops=125, mfu=28 / 125)
    assert eight["seconds"] == pytest.approx(t["seconds"] / 8) and eight["gpu_years"] == pytest.approx(t["gpu_years"])
