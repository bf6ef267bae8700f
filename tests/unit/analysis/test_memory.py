"""Analytic training memory, checked by hand; the micro-batch search on a scripted probe."""

from __future__ import annotations

import pytest

from trainprof.analysis.run.memory import (
    MemoryInputs,
    activation_bytes,
    autocast_param_count,
    breakdown,
    bytes_per_param,
    estimate_train_bytes,
    gpt_param_count,
    head_activation_terms,
    korthikanti_layer_bytes,
    largest_param,
    layer_activation_terms,
    model_state_bytes,
)

GPT2 = dict(n_layer=12, d_model=768, vocab_size=50257, context_len=1024)
TINY = dict(n_layer=4, n_head=4, d_model=256, vocab_size=256, context_len=256)


# ---- parameters and model states ---------------------------------------------------------
def test_gpt2_124m_parameter_count_by_hand():
    # wte 50257·768 + wpe 1024·768 + 12 blocks·(12·768² + 13·768) + ln_f 2·768
    assert 50257 * 768 == 38_597_376 and 1024 * 768 == 786_432
    assert 12 * 768**2 + 13 * 768 == 7_087_872
    assert gpt_param_count(**GPT2) == 38_597_376 + 786_432 + 12 * 7_087_872 + 1_536 == 124_439_808


def test_param_count_matches_the_model():
    import torch

    from trainprof.workload.config import PRESETS
    from trainprof.workload.model import GPT

    for name, m in PRESETS.items():
        with torch.device("meta"):
            n = GPT(m).num_params()
        assert gpt_param_count(m.n_layer, m.d_model, m.vocab_size, m.context_len, m.mlp_ratio) == n, name


def test_autocast_copies_every_matmul_param_and_no_other():
    p = gpt_param_count(**GPT2)
    layernorms = 2 * 768 * (2 * 12 + 1)  # weight + bias, two per block and the final one
    assert autocast_param_count(12, 768, 50257) == p - 1024 * 768 - layernorms == 123_614_976


def test_gpt2_124m_model_states_16_bytes_per_param_in_fp32():
    p = 124_439_808
    s = model_state_bytes(p, dtype="fp32", optimizer="fused")
    assert s["weights"] == 497_759_232 == s["grads"]  # 4 B/param each
    assert s["optimizer_states"] == 995_518_464  # AdamW m and v: 8 B/param
    assert s["weights_16bit"] == 0 and s["optimizer_temporaries"] == 0
    assert s["weights"] + s["grads"] + s["optimizer_states"] == 16 * p == 1_991_036_928


def test_mixed_precision_is_the_18_bytes_per_param_rule():
    p, cast = gpt_param_count(**GPT2), autocast_param_count(12, 768, 50257)
    s = model_state_bytes(p, dtype="bf16", optimizer="fused", autocast_params=cast)
    per_param = (s["weights"] + s["weights_16bit"] + s["grads"] + s["optimizer_states"]) / p
    assert 17.98 < per_param < 18  # seed 001: 4 fp32 + 2 half + 4 grads + 8 AdamW (less the fp32-only wpe, LNs)
    rules = bytes_per_param()
    assert [r["total"] for r in rules.values()] == [16, 18, 16]  # fp32; seed 001; ZeRO §3.1


def test_optimizer_temporaries_per_implementation():
    p, big = 1000, 300
    assert model_state_bytes(p, optimizer="foreach", largest=big)["optimizer_temporaries"] == 4 * 1000
    assert model_state_bytes(p, optimizer="forloop", largest=big)["optimizer_temporaries"] == 2 * 4 * 300
    assert model_state_bytes(p, optimizer="fused", largest=big)["optimizer_temporaries"] == 0
    assert largest_param(**GPT2) == 50257 * 768  # the tied embedding / head


# ---- activations --------------------------------------------------------------------------
def test_korthikanti_formula_on_gpt3():
    # GPT-3 175B (s=2048, h=12288, a=96), b=1: 5·a·s/h = 80, so s·b·h·(34 + 80) bytes per layer
    assert korthikanti_layer_bytes(2048, 1, 12288, 96) == 2048 * 12288 * 114 == 2_868_903_936


def test_our_layer_is_korthikanti_without_dropout_and_fp32_doubles_it():
    s, b, h, a = 256, 16, 256, 4
    sbh, scores = s * b * h, a * s * s * b
    stats = 16 * s * b  # LayerNorm mean + rstd, fp32, two LayerNorms
    manual32 = layer_activation_terms(s, b, h, a, dtype="fp32", attention="manual")
    # no dropout: drop Korthikanti's two 1-byte s·b·h masks and 3·a·s²·b (mask + dropout output)
    no_dropout_16bit = korthikanti_layer_bytes(s, b, h, a) - 2 * sbh - 3 * scores
    assert no_dropout_16bit == 32 * sbh + 2 * scores
    mask = s * s  # the bool causal mask masked_fill saves (shared over batch and heads)
    assert sum(manual32.values()) - stats - mask == 2 * no_dropout_16bit  # fp32: every term doubles


def test_sdpa_removes_the_score_matrix():
    s, b, h, a = 256, 16, 256, 4
    manual = layer_activation_terms(s, b, h, a, dtype="fp32", attention="manual")
    sdpa = layer_activation_terms(s, b, h, a, dtype="fp32", attention="sdpa")
    assert "attn_scores" not in sdpa and manual["attn_scores"] == 4 * a * s * s * b
    assert sdpa["attn_logsumexp"] == 4 * a * s * b  # the flash kernel's per-row statistics
    # tiny preset, micro-batch 16, fp32: 64·s·b·h + 16·s·b + 4·a·s·b = 67,239,936 B per layer
    assert sum(sdpa.values()) == 64 * s * b * h + 16 * s * b + 4 * a * s * b == 67_239_936


@pytest.mark.parametrize("attention, dtype", [("sdpa", "fp32"), ("manual", "fp32"), ("sdpa", "bf16")])
def test_layer_terms_match_what_autograd_saves(attention, dtype):
    """The real block's saved tensors (saved_tensors_hooks, unique storages, parameters and
    buffers excluded) are exactly our terms; under autocast plus the 16-bit weight copies."""
    import contextlib

    import torch

    from trainprof.workload.config import ModelConfig
    from trainprof.workload.model import Block

    s, b, h, a = 64, 2, 128, 4
    blk = Block(ModelConfig(n_layer=1, n_head=a, d_model=h, vocab_size=64, context_len=s), attention)
    skip = {t.untyped_storage().data_ptr() for t in [*blk.parameters(), *blk.buffers()]}
    saved: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in skip:
            saved[st.data_ptr()] = st.nbytes()
        return t

    amp = torch.autocast("cpu", dtype=torch.bfloat16) if dtype == "bf16" else contextlib.nullcontext()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), amp:
        blk(torch.randn(b, s, h, requires_grad=True))
    expected = sum(layer_activation_terms(s, b, h, a, dtype=dtype, attention=attention, device_kind="cpu").values())
    if dtype == "bf16":
        expected += 2 * 12 * h * h  # the 16-bit copies of the four weight matrices (model states)
    assert sum(saved.values()) == expected


def test_autocast_keeps_the_residual_stream_fp32():
    s, b, h, a = 128, 2, 64, 2
    sbh = s * b * h
    t = layer_activation_terms(s, b, h, a, dtype="bf16", attention="sdpa")
    assert t["layernorm_inputs"] == 2 * 4 * sbh  # fp32 residual stream
    assert t["gelu_input"] == t["mlp_proj_input"] == 4 * 2 * sbh  # 16-bit
    # manual attention: CUDA autocast runs softmax in fp32 and A·V saves a 16-bit copy; CPU does not
    cuda = layer_activation_terms(s, b, h, a, dtype="bf16", attention="manual", device_kind="cuda")
    cpu = layer_activation_terms(s, b, h, a, dtype="bf16", attention="manual", device_kind="cpu")
    assert cuda["attn_scores"] == 6 * a * s * s * b and cpu["attn_scores"] == 2 * a * s * s * b


def test_checkpointing_keeps_block_inputs_plus_one_layer():
    m = MemoryInputs(**TINY, micro_batch=16, seq_len=256)
    a = activation_bytes(m)
    sbh = 256 * 16 * 256
    assert a["layers"] == 4 * a["per_layer"]
    assert a["layers_checkpointed"] == 4 * 4 * sbh + a["per_layer"]  # fp32 inputs of 4 blocks + one block


def test_logits_are_three_fp32_copies():
    h = head_activation_terms(256, 16, 256, 256)
    assert h["logits"] == 12 * 16 * 256 * 256 == 12_582_912


def test_tiny_breakdown_totals_by_hand():
    m = MemoryInputs(**TINY, micro_batch=16, seq_len=256, optimizer="foreach")
    bd = breakdown(m)
    p = 3_290_624  # 4·(12·256² + 13·256) + 256·256 + 256·256 + 2·256
    assert bd["params"] == p
    assert (bd["params_bytes"], bd["grads_bytes"], bd["optimizer_bytes"]) == (4 * p, 4 * p, 8 * p)
    sbh = 256 * 16 * 256
    head = 4 * sbh + 2 * 4 * 256 * 16 + 4 * sbh + 8 * 256 * 16  # ln_f in + stats, head in, ids
    assert bd["activations_bytes"] == 4 * 67_239_936 + head
    # MLP grads, residual grad, head grad; less the head's activations and the last block's
    # down-projection input, released by then
    work = 2 * 4 * 4 * sbh + 4 * sbh + 4 * 256 * 256 - head - 4 * 4 * sbh
    assert bd["backward_working_set_bytes"] == work > bd["logits_bytes"]
    fwd_bwd = 4 * p + 8 * p + bd["activations_bytes"] + work
    assert bd["peak_forward_backward_bytes"] == fwd_bwd
    assert bd["peak_optimizer_step_bytes"] == 4 * p + 4 * p + 8 * p + 4 * p  # foreach: +4 B/param
    assert bd["peak_bytes"] == fwd_bwd and bd["peak_phase"] == "forward/backward"


def test_accumulation_keeps_gradients_through_backward():
    one = breakdown(MemoryInputs(**TINY, micro_batch=4, seq_len=64))
    acc = breakdown(MemoryInputs(**TINY, micro_batch=4, seq_len=64, grad_accum=4))
    assert acc["peak_forward_backward_bytes"] - one["peak_forward_backward_bytes"] == one["grads_bytes"]


def test_trainer_preflight_estimate_grows_and_checkpointing_shrinks_it():
    kw = dict(params=124_439_808, n_layer=12, n_head=12, d_model=768, vocab_size=50257, seq_len=1024,
              activation_bytes=4, materialised_scores=False)
    small = estimate_train_bytes(micro_batch=1, checkpointing=False, **kw)
    big = estimate_train_bytes(micro_batch=8, checkpointing=False, **kw)
    ckpt = estimate_train_bytes(micro_batch=8, checkpointing=True, **kw)
    assert 20 * 124_439_808 < small < big and ckpt < big


def test_inputs_are_validated():
    with pytest.raises(ValueError, match="memory.dtype"):
        MemoryInputs(**TINY, micro_batch=1, seq_len=8, dtype="fp8")
    with pytest.raises(ValueError, match="memory.micro_batch"):
        MemoryInputs(**TINY, micro_batch=0, seq_len=8)


# ---- the micro-batch search on a scripted probe --------------------------------------------
def _probe(peak_of, limit, calls):
    from trainprof.jobs.memory_probe import ProbeResult
    from trainprof.workload.config import TrainConfig

    def probe(b):
        calls.append(b)
        peak = peak_of(b)
        return ProbeResult(config=TrainConfig(micro_batch=b), status="ok" if peak <= limit else "oom",
                           peak_bytes=peak + 300, baseline_bytes=300)
    return probe


def test_search_doubles_then_brackets_to_adjacent_micro_batches():
    from trainprof.jobs.memory_search import find_max_micro_batch

    calls = []
    r = find_max_micro_batch(_probe(lambda b: 100 + 30 * b, 1000, calls), limit_bytes=1000)
    assert r.max_micro_batch == 30 and r.stopped == "bracketed"  # 100 + 30·30 = 1000 fits, 31 does not
    assert calls[:6] == [1, 2, 4, 8, 16, 32]
    assert 30 in calls and 31 in calls and len(calls) <= 9  # the fitted line lands it in a probe or two


def test_search_converges_when_the_line_is_wrong():
    from trainprof.jobs.memory_search import find_max_micro_batch

    calls = []  # quadratic: a straight line keeps overshooting; bisection must take over
    r = find_max_micro_batch(_probe(lambda b: b * b, 5000, calls), limit_bytes=5000)
    assert r.max_micro_batch == 70 and 71 in calls  # 70² = 4900 ≤ 5000 < 71²
    assert len(calls) <= 8 + 2 * 6


def test_search_nothing_fits_and_cap():
    from trainprof.jobs.memory_search import find_max_micro_batch

    r = find_max_micro_batch(_probe(lambda b: 10**9, 10, []), limit_bytes=10)
    assert (r.max_micro_batch, r.stopped, len(r.probes)) == (0, "nothing fits", 1)
    r = find_max_micro_batch(_probe(lambda b: b, 10**9, []), limit_bytes=10**9, cap=64)
    assert (r.max_micro_batch, r.stopped) == (64, "cap")


def test_ladder_rungs_are_cumulative():
    from trainprof.jobs.memory_search import ladder_rungs

    from dataclasses import replace

    from trainprof.workload.config import TrainConfig

    base = TrainConfig(micro_batch=16, optimizer="foreach", dtype="fp32", device="cpu").resolved()
    rungs = ladder_rungs(base)
    assert [r.name for r in rungs] == ["baseline", "gradient accumulation", "selective recompute",
                                       "activation checkpointing", "forloop AdamW", "fused AdamW", "bf16 autocast",
                                       "FSDP (2 ranks)", "Adafactor", "CPU offload (optimizer)"]
    last = rungs[6].config
    # 16 = 4 × 4: the same global batch; every earlier rung kept, nothing else touched
    assert last == replace(base, micro_batch=4, grad_accum=4, activation_checkpointing=True, optimizer="fused",
                           dtype="bf16")
    assert rungs[7].config == replace(last, strategy="fsdp")  # keeps them all, on 2 ranks
    assert rungs[-1].config is None  # offload: planned for a GPU, not run
    odd = ladder_rungs(replace(base, micro_batch=3))
    assert odd[1].config is None


@pytest.mark.parametrize("text, n", [("2GiB", 2 * 2**30), ("512MiB", 512 * 2**20), ("1.5GB", 1_500_000_000),
                                     ("800m", 800 * 2**20), ("3e9", 3_000_000_000), ("4096", 4096)])
def test_parse_size(text, n):
    from trainprof.cli.memory import parse_size

    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["2GX", "", "GiB", "-1GiB", "0", "1..5G"])
def test_parse_size_rejects(text):
    from trainprof.cli.memory import parse_size
    from trainprof.errors import UsageError

    with pytest.raises(UsageError, match="--memory-limit"):
        parse_size(text)
