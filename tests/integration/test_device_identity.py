"""A GPU trace is a GPU trace whatever its name field says (hardware/identity.py,
docs/trace-analysis.md "Device identity"): real traces edited to a known answer, analysed by
`trainprof analyze` end to end, with this machine's CPU benchmarks made to fail if called."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from trainprof.cli import main
from trainprof.hardware.specs import load_specs

from tests.plain import plain

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "traces" / "real"
H100 = REAL / "tracelens_h100_hf_inference" / "gaunernst_bert-small-uncased__1016001.json.gz"  # 65 KB, sm90_xmma
MI300 = REAL / "tracelens_mi300_torch_compile_triton" / "trace.json.gz"  # 6 KB, Cijk_* hipBLASLt GEMMs
RECSYS = REAL / "hta_recsys_128rank_nccl_a100"  # 2 ranks of 128, no deviceProperties at all
RTX = REAL / "param_resnet_rtx2080ti_dataloader" / "resnet_kineto.json.gz"
V100 = REAL / "hta_resnet_v100_ns_timeunit" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"


@pytest.fixture
def no_cpu_benchmark(monkeypatch):
    """Measuring this machine's matmul/copy peak for a GPU trace is the bug (11-23 s for a
    34 KB trace): make it fail loudly."""
    import trainprof.backends.cpu as cpu

    def boom(*a, **k):
        raise AssertionError("a GPU trace must not measure this machine's CPU")

    monkeypatch.setattr(cpu, "measured_matmul_tflops", boom)
    monkeypatch.setattr(cpu, "measured_bandwidth_gbs", boom)


def _edit(src: Path, dst: Path, fn) -> Path:
    d = json.loads(gzip.decompress(src.read_bytes()))
    fn(d)
    dst.write_bytes(gzip.compress(json.dumps(d).encode()))
    return dst


def _blank(d: dict) -> None:
    """No device name anywhere: the deviceProperties block gone (as in the recsys traces)."""
    d.pop("deviceProperties", None)


def _rename_kernels(d: dict, old: str, new: str) -> None:
    for e in d["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = e["name"].replace(old, new)


def _analyze(tmp_path: Path, capsys, *paths: str) -> tuple[dict, str]:
    out = tmp_path / "out"
    # --jobs 1: the ranks in this process, where the CPU benchmarks are patched to fail
    assert main(["analyze", *paths, "--out", str(out), "--top", "5", "--jobs", "1"]) == 0
    return json.loads((out / "analysis.json").read_text()), capsys.readouterr().out


def test_blank_gpu_trace_gets_no_cpu_roofs_and_a_gpu_spec_hint(tmp_path, capsys, no_cpu_benchmark):
    def edit(d):
        _blank(d)
        _rename_kernels(d, "sm90_", "")  # no architecture string left either
        _rename_kernels(d, "cutlass_80_", "cutlass_")

    a, out = _analyze(tmp_path, capsys, str(_edit(H100, tmp_path / "blank.json.gz", edit)))
    r = a["ranks"][0]
    assert r["has_gpu"] and r["device_name"] is None and r["device"]["gpu"] and r["device"]["arch"] is None
    assert r["roofline"]["source"] == "unknown" and r["roofline"]["peaks_by_dtype"] == {}
    assert "--gpu-spec KEY" in r["roofline"]["hint"]
    assert r["roofline_points"] and all(p["roofline_pct"] is None for p in r["roofline_points"])
    assert "device: GPU not named in the trace (NVIDIA)" in out and "CPU-only" not in out


def test_an_architecture_tag_left_in_the_trace_names_the_spec_class(tmp_path, capsys, no_cpu_benchmark):
    a, out = _analyze(tmp_path, capsys, str(_edit(H100, tmp_path / "sm90.json.gz", _blank)))
    r = a["ranks"][0]
    assert (r["device"]["arch"], r["device"]["family"], r["device"]["bf16"]) == ("sm_90", "Hopper", True)
    hint = r["roofline"]["hint"]
    # Hopper's rows span 756-990 bf16 TFLOP/s: every one offered, none assumed
    assert r["roofline"]["source"] == "unknown"
    assert all(f"{k}" in hint for k in load_specs().rows_of("sm_90")) and "sm90" in hint
    assert "Hopper, sm_90" in out


def test_a_one_product_architecture_is_assumed_and_says_why(tmp_path, capsys, no_cpu_benchmark):
    def edit(d):
        _blank(d)
        _rename_kernels(d, "sm90_", "sm121_")  # GB10 (DGX Spark) is the only sm_121 part

    a, out = _analyze(tmp_path, capsys, str(_edit(H100, tmp_path / "sm121.json.gz", edit)))
    r = a["ranks"][0]
    assert (r["device"]["spec_key"], r["device"]["spec_assumed"]) == ("gb10", True)
    rf = r["roofline"]
    # the DGX Spark datasheet: 273 GB/s, and no dense compute peak at all (only sparse FP4)
    assert rf["source"] == "datasheet:gb10 (assumed from sm_121)" and rf["peak_bandwidth_gbs"] == 273
    assert rf["peaks_by_dtype"] == {} and "GB10 chip's alone" in rf["hint"] and "--peak-tflops" in rf["hint"]
    assert "Blackwell (GB10), sm_121" in out


def test_a_gfx942_tag_names_cdna3(tmp_path, capsys, no_cpu_benchmark):
    def edit(d):
        _blank(d)
        for e in d["traceEvents"]:
            if e.get("cat") == "kernel" and e["name"].startswith("Cijk_"):
                e["name"] += "_gfx942"  # hipBLASLt/Tensile code objects are per ISA

    a, _ = _analyze(tmp_path, capsys, str(_edit(MI300, tmp_path / "gfx942.json.gz", edit)))
    dev = a["ranks"][0]["device"]
    assert (dev["vendor"], dev["arch"], dev["family"], dev["bf16"]) == ("amd", "gfx942", "CDNA3", True)
    assert "mi300x or mi325x" in a["ranks"][0]["roofline"]["hint"]


def test_recsys_ranks_are_gpu_ranks(tmp_path, capsys, no_cpu_benchmark):
    """The 128-rank recsys job (NCCL, cutlass kernels, memcpy; no deviceProperties) was headed
    "no GPU activity (CPU-only trace)" with a roofline at 35,198% of this machine's CPU."""
    a, out = _analyze(tmp_path, capsys, str(RECSYS))
    assert len(a["ranks"]) == 2
    for r in a["ranks"]:
        assert r["has_gpu"] and r["device"]["min_arch"] == "sm_80"  # cutlass_80 kernels: sm_80 or newer
        assert r["roofline"]["source"] == "unknown" and "a100-sxm4-80gb" in r["roofline"]["hint"]
        assert all(p["roofline_pct"] is None for p in r["roofline_points"])
    assert out.count("device: GPU not named in the trace (NVIDIA Ampere or newer, ≥ sm_80") == 2
    assert "CPU-only" not in out and "measured on this machine" not in out


def _rank(path: Path) -> dict:
    """One trace's record with its findings, as `analyze` writes it (without the printing)."""
    from trainprof.jobs.analyze import analyze_paths

    return plain(analyze_paths([str(path)], top_k=5).ranks[0])


def test_rtx_2080_ti_is_turing_and_gets_its_fp16_tensor_core_finding(no_cpu_benchmark):
    r = _rank(RTX)
    assert (r["device"]["spec_key"], r["device"]["family"], r["device"]["bf16"]) == ("rtx-2080-ti", "Turing", False)
    assert r["roofline"]["source"] == "datasheet:rtx-2080-ti"
    (f,) = [f for f in r["findings"] if f["id"] == "low_tensor_core"]
    # fp32 ResNet (volta_sgemm, fp32 Winograd): no kernel on Tensor Cores; the gain scales the
    # non-TC share by 1 - 13.4/53.8 (Turing whitepaper: fp32 vs fp16-with-fp32-accumulate)
    assert r["matmul_tensor_core_us"] == 0
    span = r["idle_breakdown"]["span_us"]
    assert f["estimated_gain_pct"] == pytest.approx(100 * r["matmul_us"] / span * (1 - 13.4 / 53.8), abs=0.01)
    assert "dtype=torch.float16" in f["fix"] and "GradScaler" in f["fix"]
    assert "torch.bfloat16" not in f["fix"] and "allow_tf32" not in f["fix"] and "--dtype bf16" not in f["fix"]


def test_compute_capability_alone_names_the_class(no_cpu_benchmark):
    """The RTX 2080 Ti trace with its deviceProperties name gone: computeMajor/Minor 7.5 is
    Turing, whose two rows differ (53.8 vs 65 fp16 TFLOP/s), so no row is assumed."""
    from dataclasses import replace

    from trainprof.hardware.identity import identify, peak_hint
    from trainprof.trace import read_trace
    from trainprof.trace.device import device_facts

    facts = replace(device_facts(read_trace(RTX)), name=None)
    assert facts.compute == (7, 5) and facts.vendor_hint == "nvidia"
    d = identify(facts)
    assert (d.arch, d.family, d.spec, d.bf16) == ("sm_75", "Turing", None, False)
    assert "--gpu-spec rtx-2080-ti or t4" in peak_hint(d)


def test_v100_fix_is_fp16_with_a_grad_scaler_never_bf16(no_cpu_benchmark):
    (f,) = [f for f in _rank(V100)["findings"] if f["id"] == "low_tensor_core"]
    assert "dtype=torch.float16" in f["fix"] and "GradScaler" in f["fix"] and "--dtype fp16" in f["fix"]
    assert "torch.bfloat16" not in f["fix"] and "allow_tf32" not in f["fix"]
