"""hardware/identity.py: which device a trace ran on, from the facts the trace holds. Each
case states the facts and the answer known before the code runs (the CUDA programming
guide's compute-capability table, ROCm's gfx names, specs.toml's [[arch]] rows)."""

from __future__ import annotations

import pytest

from trainprof.hardware.identity import DeviceFacts, identify, kernel_arch, peak_hint
from trainprof.hardware.specs import load_specs


def _id(**kw):
    return identify(DeviceFacts(gpu_activity=kw.pop("gpu_activity", True), **kw))


def test_a_named_row_gives_its_architecture_and_capabilities():
    d = _id(name="NVIDIA GeForce RTX 2080 Ti", compute=(7, 5), vendor_hint="nvidia")
    assert (d.spec.key, d.arch, d.family, d.assumed) == ("rtx-2080-ti", "sm_75", "Turing", False)
    assert (d.bf16, d.tf32, d.tensor_cores) == (False, False, True)  # Turing: fp16 Tensor Cores only
    assert d.label() == "NVIDIA GeForce RTX 2080 Ti (Turing, sm_75)"


def test_compute_capability_without_a_name_names_the_class_and_its_keys():
    d = _id(compute=(7, 5), vendor_hint="nvidia")
    assert (d.arch, d.family, d.spec, d.bf16) == ("sm_75", "Turing", None, False)
    hint = peak_hint(d)
    # every sm_75 row is offered, and no peak is guessed
    assert "--gpu-spec rtx-2080-ti or t4 if it is one of those" in hint and "no MFU" in hint


@pytest.mark.parametrize("names, vendor, arch, min_arch, rows", [
    # wgmma kernels run only on sm_90: the architecture itself; every Hopper row is a candidate
    (["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
      "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)"],
     "nvidia", "sm_90", None, ["h100-sxm", "h100-pcie", "h100-nvl", "h200", "h200-nvl", "gh200"]),
    # AMD code objects are per ISA: a gfx942 tag is the ISA
    (["Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_gfx942"], "amd", "gfx942", None,
     ["mi300x", "mi325x"]),
    # sm80 kernels run on sm_80 and every newer GPU: a lower bound only
    (["void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x5_tn_align4>(Params)"], "nvidia", None, "sm_80",
     ["a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb"]),
    (["volta_sgemm_128x64_nn", "void cutlass::Kernel<cutlass_75_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn>(Params)"],
     "nvidia", None, "sm_75", ["rtx-2080-ti", "t4"]),
    (["bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a"],
     "nvidia", "sm_100", None, ["b200"]),
])
def test_kernel_name_tags(names, vendor, arch, min_arch, rows):
    v, a, lo, basis = kernel_arch(names)
    assert (v, a, lo) == (vendor, arch, min_arch) and "kernel-name tag" in basis
    d = _id(kernel_names=tuple(names))
    assert load_specs().rows_of(a or lo) == rows
    assert all(k in peak_hint(d) for k in rows)


def test_capabilities_of_a_lower_bound_hold_only_when_every_newer_gpu_has_them():
    assert _id(kernel_names=("cutlass_80_tensorop_s1688gemm",)).bf16 is True  # every GPU >= sm_80 has bf16
    assert _id(kernel_names=("volta_sgemm_128x64_nn",)).bf16 is None  # V100 has not, an A100 has
    assert _id(kernel_names=("volta_sgemm_128x64_nn",)).tensor_cores is True


def test_one_product_architecture_is_assumed_and_says_so():
    d = _id(compute=(12, 1), vendor_hint="nvidia")
    assert (d.arch, d.spec.key, d.assumed) == ("sm_121", "gb10", True)
    assert _id(compute=(9, 0), vendor_hint="nvidia").spec is None  # Hopper spans 756-990 TFLOP/s: no guess


def test_amd_architecture_from_gcn_arch_name_or_hip_version():
    assert _id(gcn_arch="gfx90a:sramecc+:xnack-", name="AMD Instinct MI250X / MI250").arch == "gfx90a"
    d = _id(compute=(9, 4), vendor_hint="amd")
    assert (d.arch, d.family, d.vendor, d.bf16) == ("gfx942", "CDNA3", "amd", True)
    # HIP reports gfx906, gfx908 and gfx90a all as 9.0: no arch, the three named, bf16 unknown
    d = _id(name="AMD Radeon Graphics", compute=(9, 0))
    assert (d.vendor, d.arch, d.arch_options, d.bf16) == ("amd", None, ("gfx906", "gfx908", "gfx90a"), None)
    assert "mi250x or mi250" in peak_hint(d) and "gfx906 or gfx908 or gfx90a" in peak_hint(d)
    # an NVIDIA 9.0 is Hopper, an AMD 9.0 is not: the vendor decides how to read the digits
    assert _id(compute=(9, 0), vendor_hint="nvidia").arch == "sm_90"


def test_gpu_from_events_never_from_the_name():
    assert not _id(gpu_activity=False).gpu  # a CPU-only trace
    # deviceProperties alone (a CPU profile on a GPU node) is not a GPU trace
    assert not _id(gpu_activity=False, name="NVIDIA H100 80GB HBM3", compute=(9, 0)).gpu
    d = _id(gpu_activity=False, gpu_calls=True)
    assert d.gpu and "no GPU activity recorded" in d.label()
    d = _id()  # kernels, nothing else known
    assert d.gpu and d.label() == "GPU not named in the trace" and "--gpu-spec KEY" in peak_hint(d)
