"""The memory ladder's rungs and what they rest on, without launching a probe: the rungs built
from a configuration, Adafactor's state against AdamW's (hand-counted on the tiny preset), the
plan of the FSDP rung, the ranks' probes combined, and selective recompute's saved bytes."""

from __future__ import annotations

import pytest
import torch

from trainprof.analysis.plan.memory import adafactor_state_elements, state_bytes
from trainprof.errors import ConfigError
from trainprof.jobs.memory_probe import ProbeResult
from trainprof.jobs.memory_ranks import combine
from trainprof.jobs.memory_search import FSDP_RANKS, ladder_rungs
from trainprof.jobs.plan_check import plan_inputs
from trainprof.workload.config import ModelConfig, TrainConfig
from trainprof.workload.model import GPT

BASE = TrainConfig(preset="tiny", device="cpu", dtype="fp32").resolved()  # micro-batch 16 × 256
TINY_PARAMS = 3_290_624


def test_rungs_from_the_default_configuration():
    rungs = ladder_rungs(BASE)
    assert [r.name for r in rungs] == [
        "baseline", "gradient accumulation", "selective recompute", "activation checkpointing", "forloop AdamW",
        "fused AdamW", "bf16 autocast", "FSDP (2 ranks)", "Adafactor", "CPU offload (optimizer)"]
    by = {r.name: r for r in rungs}
    sel = by["selective recompute"].config
    assert sel.activation_checkpointing and sel.recompute == "selective" and sel.micro_batch == 4
    assert by["activation checkpointing"].config.recompute == "full"
    fsdp = by["FSDP (2 ranks)"]
    # keeps every rung above it (full checkpointing, fused AdamW, bf16), on 2 ranks
    assert fsdp.ranks == FSDP_RANKS == 2 and fsdp.config.strategy == "fsdp"
    assert (fsdp.config.optimizer, fsdp.config.dtype, fsdp.config.recompute) == ("fused", "bf16", "full")
    # Adafactor replaces AdamW in the last one-rank rung (torch's Adafactor fails on DTensor shards)
    ada = by["Adafactor"]
    assert ada.ranks == 1 and ada.config == fsdp.config.__class__(**{**vars(fsdp.config), "strategy": "ddp",
                                                                      "optimizer": "adafactor"})
    off = by["CPU offload (optimizer)"]
    assert off.config is None and "host is the device" in off.note
    assert off.plan == {"config": by["bf16 autocast"].config, "layout": {"zero": 1, "offload": "optimizer"},
                        "device": "cuda"}
    assert all(r.ranks == 1 for r in rungs if r.name != "FSDP (2 ranks)")


def test_offload_reason_on_a_gpu_names_the_workload():
    off = ladder_rungs(TrainConfig(preset="tiny", device="cuda", dtype="bf16").resolved())[-1]
    assert off.config is None and "no offload" in off.note and "host is the device" not in off.note


def test_adafactor_state_is_rows_plus_cols_per_matrix():
    # tiny: d 256, V 256, ctx 256, 4 blocks. Matrices per block (rows + cols): qkv 768×256 → 1,024,
    # proj 256×256 → 512, fc 1024×256 → 1,280, proj 256×1024 → 1,280 = 4,096; vectors (full size):
    # biases 768 + 256 + 1,024 + 256 and two LayerNorms 2·512 = 3,328 → 7,424 per block, ×4 = 29,696;
    # wte and wpe 256×256 → 512 each, final LayerNorm 512: 31,232 elements, 124,928 B in fp32
    shape, _, _ = plan_inputs(replace_opt(BASE, "adafactor"))
    assert adafactor_state_elements(shape) == 31_232
    ada = state_bytes(shape, plan_inputs(replace_opt(BASE, "adafactor"))[1])["optimizer_states"]
    adamw = state_bytes(shape, plan_inputs(BASE)[1])["optimizer_states"]
    assert (ada, adamw) == (4 * 31_232, 8 * TINY_PARAMS)  # 0.5% of AdamW's two moments


def test_adafactor_plan_matches_torchs_state():
    """torch.optim.Adafactor's real state after one step on a small GPT equals the plan's count."""
    m = ModelConfig(n_layer=1, n_head=2, d_model=32, vocab_size=64, context_len=16)
    cfg = TrainConfig(preset="tiny", optimizer="adafactor", lr=1e-3)
    from trainprof.workload.setup import make_optimizer

    torch.manual_seed(0)
    model = GPT(m)
    opt = make_optimizer(model, cfg)
    x = torch.randint(0, 64, (2, 8))
    model(x, x).backward()
    opt.step()
    got = sum(v.numel() for st in opt.state.values() for k, v in st.items() if k != "step")
    from trainprof.analysis.plan.shape import ModelShape

    shape = ModelShape(n_layer=1, d_model=32, n_head=2, vocab_size=64, context_len=16, ffn=128, fused_qkv=True)
    # matrices qkv 96×32 → 128, proj 32×32 → 64, fc 128×32 → 160, proj 32×128 → 160 = 512; vectors:
    # biases 96 + 32 + 128 + 32, LayerNorms 64 + 64 = 416; wte 64×32 → 96, wpe 16×32 → 48, ln_f 64 = 208
    assert got == adafactor_state_elements(shape) == 512 + 416 + 208


def test_fsdp_rung_is_planned_as_full_shard_over_its_ranks():
    cfg = TrainConfig(preset="tiny", device="cpu", dtype="fp32", strategy="fsdp").resolved()
    shape, lay, foreach = plan_inputs(cfg, ranks=2)
    assert (lay.dp, lay.fsdp, foreach) == (2, True, True)
    st = state_bytes(shape, lay)
    # fp32 FSDP: weights, gradients and both AdamW moments each ÷ 2 ranks
    assert (st["weights"], st["grads"], st["optimizer_states"]) == (2 * TINY_PARAMS, 2 * TINY_PARAMS, 4 * TINY_PARAMS)
    assert not plan_inputs(TrainConfig(preset="tiny", dtype="fp32").resolved(), ranks=2)[1].fsdp  # DDP


def test_ranks_combine_to_the_highest_rank():
    def r(status, peak, base=100, reason=""):
        return ProbeResult(config=BASE, status=status, peak_bytes=peak, baseline_bytes=base, reason=reason, wall_s=1)

    one = combine(BASE, [r("ok", 150), r("ok", 170, base=110)])
    assert one.above_baseline_bytes == 60 and one.ranks_above_baseline_bytes == (50, 60)
    bad = combine(BASE, [r("oom", 150, reason="RSS passed"), r("error", None, reason="boom")])
    assert bad.status == "error" and bad.reason == "rank 1: boom"


def test_selective_needs_checkpointing():
    with pytest.raises(ConfigError, match="recompute"):
        TrainConfig(recompute="selective")


def test_selective_recompute_drops_the_scores():
    """Manual attention saves its softmax output, B·H·T·T fp32, and masked_fill's inverted causal
    mask, T·T bool; selective recompute saves q, k, v only (views of qkv, saved anyway): the
    saved bytes differ by exactly those two tensors."""
    m = ModelConfig(n_layer=1, n_head=2, d_model=32, vocab_size=64, context_len=16)
    B, T = 2, 16

    def saved(**kw):
        torch.manual_seed(0)
        model = GPT(m, attention="manual", **kw)
        seen = {}

        def pack(t):
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(torch.randint(0, 64, (B, T)))
        return sum(seen.values())

    assert saved() - saved(checkpointing=True, recompute="selective") == 4 * B * m.n_head * T * T + T * T


def replace_opt(cfg, optimizer):
    from dataclasses import replace

    return replace(cfg, optimizer=optimizer)


@pytest.mark.parametrize("attention", ["sdpa", "manual"])
def test_selective_recompute_flops_are_counted(attention):
    from trainprof.workload.setup import count_model_flops

    cfg = TrainConfig(preset="tiny", micro_batch=2, seq_len=64, activation_checkpointing=True, recompute="selective",
                      attention=attention).resolved()
    f = count_model_flops(cfg)
    # QKᵀ again, 2·T·d per token and layer: 4 layers × 2 · 64 · 256 × 128 tokens = 16,777,216
    assert f["hardware_flops_per_step"] - f["model_flops_per_step"] == 16_777_216
    assert f["hardware_flops_per_step"] == f["analytic_hardware_flops_per_step"]


def test_fsdp_under_autocast_gathers_fp32_and_keeps_16bit_copies():
    """Our FSDP2 runs bf16 as autocast over fp32 shards, not MixedPrecision: the plan of the
    ladder's bf16 FSDP rung gathers fp32 blocks and keeps autocast's unsharded 16-bit copies."""
    from dataclasses import replace

    from trainprof.analysis.plan.memory import plan_memory

    cfg = TrainConfig(preset="tiny", device="cpu", dtype="bf16", strategy="fsdp").resolved()
    shape, lay, _ = plan_inputs(cfg, ranks=2)
    assert lay.fsdp and lay.fsdp_autocast and lay.autocast
    auto, mixed = plan_memory(shape, lay), plan_memory(shape, replace(lay, fsdp_autocast=False))
    # block 12·256² + 13·256 = 789,760; root 256·256 (wte) + 256·256 (wpe) + 512 (ln_f) = 131,584:
    # three blocks and the root, 4 B each under autocast, 2 under MixedPrecision
    assert auto["temporaries"]["gathered_units"] == 4 * (3 * 789_760 + 131_584) == 10_003_456
    assert mixed["temporaries"]["gathered_units"] == 2 * (3 * 789_760 + 131_584)
    # the 16-bit copies of every matmul weight and bias (not sharded), none under MixedPrecision
    assert auto["states"]["weights_16bit"] == 2 * (shape.matmul_params() + shape.linear_bias_params())
    assert mixed["states"]["weights_16bit"] == 0
    assert auto["states"]["weights"] == mixed["states"]["weights"] == 4 * TINY_PARAMS // 2
    with pytest.raises(ConfigError, match="fsdp_autocast"):
        replace(lay, fsdp=False, dp=1)


def test_fsdp_on_gpus_is_planned_not_probed():
    """Rank probes are gloo ranks on CPU cores; on a GPU the rung keeps `plan`'s estimate."""
    rungs = {r.name: r for r in ladder_rungs(TrainConfig(preset="tiny", device="cuda", dtype="bf16").resolved())}
    fsdp = rungs["FSDP (2 ranks)"]
    assert fsdp.config is None and fsdp.ranks == 2 and "--nproc 2 --strategy fsdp" in fsdp.note
    assert fsdp.plan["config"].strategy == "fsdp" and fsdp.plan["device"] == "cuda"


def test_layout_search_keeps_fsdp_autocast_on_fsdp_layouts_only():
    from dataclasses import replace

    from trainprof.analysis.plan.search import candidate_layouts

    shape, lay, _ = plan_inputs(TrainConfig(preset="tiny", dtype="bf16", strategy="fsdp").resolved(), ranks=2)
    got = list(candidate_layouts(shape, replace(lay, micro_batch=1), 4))  # a non-FSDP layout would raise
    assert {x.fsdp for x in got} == {True, False} and all(x.fsdp_autocast == x.fsdp for x in got)
