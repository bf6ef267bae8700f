"""The kernel classifier against the labelled corpus (tests/data/kernel_names.tsv), and the
token-boundary and precedence rules of trace/kernel_classes.toml."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainprof.trace.classify import _CAMEL, _NON_ALNUM, OTHER, _unmangle_prefix, classify_rows, load_classes, \
    parse_classes, tokens
from trainprof.trace.kinds import Kind

CORPUS = Path(__file__).resolve().parents[2] / "data" / "kernel_names.tsv"


def _corpus() -> list[tuple[str, str, bool, str]]:
    rows = []
    with open(CORPUS, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or line.startswith("name\t"):
                continue
            name, cls, tc, source = line.rstrip("\n").split("\t")
            assert tc in ("yes", "no"), line
            rows.append((name, cls, tc == "yes", source))
    return rows


def _confusion(pairs: list[tuple[str, str]]) -> str:
    """Rows: label, columns: classifier."""
    labels = sorted({a for a, _ in pairs} | {b for _, b in pairs})
    count = collections.Counter(pairs)
    width = max(len(x) for x in labels) + 1
    head = " " * width + " ".join(f"{x[:6]:>6}" for x in labels)
    lines = [head] + [f"{a:<{width}}" + " ".join(f"{count[(a, b)] or '.':>6}" for b in labels) for a in labels]
    return "\n".join(lines)


def test_corpus_is_large_and_covers_every_class():
    rows = _corpus()
    assert len(rows) >= 400
    assert len({r[0] for r in rows}) == len(rows), "duplicate names in the corpus"
    kc = load_classes()
    assert {r[1] for r in rows} == set(kc.names) | {OTHER}
    # both real trace names and public names are there
    assert sum(r[3].startswith("trace:") for r in rows) >= 500
    assert sum(r[3].startswith("public:") for r in rows) >= 200


def test_classifier_agrees_with_every_labelled_name():
    kc = load_classes()
    rows = _corpus()
    got = [kc.classify(n) for n, *_ in rows]
    pairs = [(r[1], g) for r, g in zip(rows, got)]
    wrong = [(r[0][:160], r[1], g) for r, g in zip(rows, got) if r[1] != g]
    print("\nconfusion (rows: label, columns: classifier)\n" + _confusion(pairs))
    assert not wrong, f"{len(wrong)} of {len(rows)} names misclassified:\n" + "\n".join(map(str, wrong[:40]))


def test_tensor_core_flag_agrees_with_every_labelled_name():
    kc = load_classes()
    wrong = [(n[:160], tc) for n, cls, tc, _ in _corpus() if kc.is_tensor_core(n) != tc]
    assert not wrong, f"{len(wrong)} Tensor Core flags wrong:\n" + "\n".join(map(str, wrong[:40]))


def test_tokens_split_camel_case_and_separators():
    assert tokens("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "nccl dev kernel all reduce sum f32 ring ll"
    assert tokens("bmm_MxE4m3_MxE2m1_sm100f") == "bmm mx e4m3 mx e2m1 sm100f"
    assert tokens("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64>") == \
        "void cutlass kernel cutlass 80 tensorop s1688gemm 64x64"


# runs of letters/digits with the separators and cases that make camelCase boundaries
NAMEISH = st.text(alphabet="aZbY09_:<>( ,*&", max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.lists(NAMEISH, min_size=1, max_size=6))
def test_tokens_run_by_run_equal_the_whole_name_split(names):
    """tokens() splits each alphanumeric run on its own (memoised across names): the same as
    the camelCase regex over the whole name, because every boundary it finds is inside a run."""
    memo: dict[str, str] = {}
    for n in names:
        whole = " ".join(_NON_ALNUM.sub(" ", _CAMEL.sub(" ", _unmangle_prefix(n))).lower().split())
        assert tokens(n) == whole and tokens(n, memo) == whole


@pytest.mark.parametrize("name, cls", [
    # `conv` is a token, not a substring: "convert" is not a convolution
    ("triton_poi_fused_convert_element_type_0", "triton"),
    ("void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8> >(Flash_bwd_params, int)", "attention"),
    ("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)", "normalisation"),
    # a MoE finalize kernel in a cutlass_kernels namespace is not a GEMM
    ("void tensorrt_llm::kernels::cutlass_kernels::finalizeMoeRoutingKernel<__nv_bfloat16>(int)", "reduction"),
    # communication before compute, although the names say "reduce"
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)", "communication"),
    ("void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 16, 8>(c10::BFloat16*)", "communication"),
    ("void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(__nv_bfloat16*)", "communication"),
    # cuDNN convolution kernels that used to fall into "other"
    ("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int)", "convolution"),
    ("void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 8, 3, 3, 5, false, 512>(int)", "convolution"),
    ("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(int)", "convolution"),
    ("volta_scudnn_128x64_relu_interior_nn_v1", "convolution"),
])
def test_word_boundaries_and_precedence(name, cls):
    assert load_classes().classify(name) == cls


@pytest.mark.parametrize("name", [
    "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s4_et64x16_m128x16x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_biasM_sm100f",
    "bmm_Bfloat16_MxE2m1Bfloat16_Fp32_t128x8x256u2_s6_et64x8_m64x8x16_cga1x1x1_16dp256b_TN_transOut_schedS_biasFp32N_sm100f",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
])
def test_block_scaled_and_hopper_blackwell_gemms_use_tensor_cores(name):
    kc = load_classes()
    assert kc.classify(name) == "gemm"
    assert kc.is_tensor_core(name)


def test_tensor_core_only_for_matrix_classes():
    # a kernel outside GEMM/conv/attention never counts as Tensor Core, whatever its name says
    kc = load_classes()
    name = "void tensorrt_llm::kernels::cutlass_kernels::finalizeMoeRoutingKernel<cutlass::bfloat16_t, tensorop>(int)"
    assert kc.classify(name) == "reduction" and not kc.is_tensor_core(name)


def test_rule_with_unknown_class_is_refused():
    bad = 'classes = ["gemm"]\n[[rule]]\nclass = "gem"\nmatch = ["x"]\n[tensor_core]\nclasses = []\nmatch = ["y"]\n'
    with pytest.raises(ValueError, match="rule 1: class 'gem'"):
        parse_classes(bad)


def test_rows_classified_once_per_distinct_name():
    # three kernel rows sharing two names, one memcpy row whose name would say "gemm"
    names = ("volta_sgemm_128x64_nn", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", "gemm_named_copy")
    name_id = np.array([0, 1, 0, 2])
    kind = np.array([Kind.KERNEL, Kind.KERNEL, Kind.KERNEL, Kind.MEMCPY])
    rc = classify_rows(names, name_id, kind)
    got = [rc.names[i] for i in rc.class_id]
    assert got == ["gemm", "communication", "gemm", "memcpy"]
    assert not rc.tensor_core.any()


def test_custom_all_reduce_counts_as_communication_in_the_breakdown(tmp_path):
    """A tensor-parallel step: 300 µs GEMM, then a 100 µs vLLM custom all-reduce. The
    all-reduce is communication (it was "reduction" compute before): compute 300,
    communication 100, idle 0 over a 400 µs span."""
    import json

    from trainprof.analysis.timeline.context import Context
    from trainprof.analysis.timeline.temporal import temporal_breakdown
    from trainprof.trace import read_trace

    ev = []
    for i, (name, ts, dur) in enumerate([("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel", 100, 300),
                                         ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(int)", 400, 100)]):
        ev += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10 + i,
                "dur": 1, "args": {"correlation": i + 1}},
               {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                "args": {"correlation": i + 1, "stream": 7, "device": 0}}]
    p = tmp_path / "tp.json"
    p.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
                             "traceEvents": ev}))
    tb = temporal_breakdown(Context.build(read_trace(p)))
    assert (tb.compute_us, tb.communication_us, tb.idle_us) == (300.0, 100.0, 0.0)


def test_resnet_v100_step_is_mostly_gemm_and_convolution():
    """cuDNN's dgrad_engine / wgrad_alg0_engine / Winograd kernels used to fall into "other"
    (22% of this ResNet-50 trace) and GEMM + convolution read 33%; every kernel now has a class."""
    from pathlib import Path

    from trainprof.analysis.timeline.context import Context
    from trainprof.analysis.timeline.ops import class_breakdown
    from trainprof.trace import read_trace

    real = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"
    ctx = Context.build(read_trace(real / "hta_resnet_v100_ns_timeunit" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"))
    share = {c.kind: c.share_pct for c in class_breakdown(ctx).classes}
    assert "other" not in share
    assert share["gemm"] + share["convolution"] == pytest.approx(63.2, abs=0.5)
