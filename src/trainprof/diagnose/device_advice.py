"""Fix text that fits the device the trace ran on (the record's `device` block,
hardware/identity.py): bf16 advice only where the GPU has a bf16 matrix path (NVIDIA compute
capability ≥ 8.0, AMD CDNA2 and later), fp16 with a GradScaler where it has not (V100, T4,
RTX 20-series), ROCm's names where the trace is AMD. Where the device is unknown the text
says both, with the condition, rather than guess.
"""

from __future__ import annotations

from trainprof.recordtypes.analysis import DeviceId, Rank
from trainprof.recordtypes.base import or_default

FP16_RECIPE = ("torch.autocast('cuda', dtype=torch.float16) around forward+loss with torch.amp.GradScaler('cuda') "
               "(scaler.scale(loss).backward(); scaler.step(opt); scaler.update())")
BF16_RECIPE = "torch.autocast('cuda', dtype=torch.bfloat16) around forward+loss (no GradScaler needed)"


def device_of(rank: Rank | None) -> DeviceId | None:
    return or_default(rank.device, None) if rank else None


def is_amd(dev: DeviceId | None) -> bool:
    return dev is not None and dev.vendor == "amd"


def matrix_units(dev: DeviceId | None) -> str:
    """What the vendor calls its MMA units."""
    return "Matrix Cores" if is_amd(dev) else "Tensor Cores"


def _which(dev: DeviceId) -> str:
    return dev.name or dev.family or dev.arch or "this GPU"


def precision_fix(dev: DeviceId | None) -> str:
    """How to move fp32 matmuls onto the matrix units of this device."""
    if dev is None or dev.bf16 is None:
        return (f"{BF16_RECIPE} if the GPU has bf16 matrix units (NVIDIA compute capability ≥ 8.0, AMD CDNA2 and "
                f"later); otherwise {FP16_RECIPE}. Reference workload: --dtype bf16 (or --dtype fp16)")
    if not dev.bf16:
        tf32 = "" if dev.tf32 else " or TF32"
        return (f"{FP16_RECIPE}: {_which(dev)} has no bf16{tf32} path on its {matrix_units(dev)}, so fp16 is the "
                "dtype they run. Reference workload: --dtype fp16")
    if is_amd(dev):
        return (f"{BF16_RECIPE}; ROCm keeps the 'cuda' device type, and hipBLASLt then runs the GEMMs on the "
                "Matrix Cores (MFMA; rocprof's SQ_VALU_MFMA_BUSY_CYCLES confirms). Reference workload: --dtype bf16")
    tf32 = ", or torch.backends.cuda.matmul.allow_tf32 = True for fp32 models" if dev.tf32 else ""
    return f"{BF16_RECIPE}{tf32}. Reference workload: --dtype bf16"


def sdpa_fix(dev: DeviceId | None) -> str:
    """How to get SDPA off its math fallback on this device."""
    common = "a head dim ≤ 256 divisible by 8, is_causal=True instead of an explicit mask, no dropout in eval"
    if dev is not None and dev.bf16 is False:
        return (f"use fp16 inputs ({_which(dev)} has no bf16; FlashAttention needs compute capability ≥ 8.0, so the "
                f"fused kernel here is the memory-efficient one), {common}; check "
                "torch.backends.cuda.mem_efficient_sdp_enabled()")
    if is_amd(dev):
        return (f"use bf16/fp16 inputs, {common}; on ROCm the fused kernels are AOTriton's and CK's: check "
                "torch.backends.cuda.flash_sdp_enabled() and that the ROCm build ships them for this GPU")
    return f"use bf16/fp16 inputs, {common}; check torch.backends.cuda.flash_sdp_enabled()"
