import re

import pytest

from trainprof.hardware.specs import DTYPES, load_specs, parse_specs, peak_dtype_for

REAL_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-sxm4-40gb",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "Tesla V100-SXM2-32GB": "v100-sxm2",
    "Tesla V100-SXM2-16GB": "v100-sxm2",
    "Tesla V100-PCIE-32GB": "v100-pcie",
    "NVIDIA B200": "b200",
    "NVIDIA H200": "h200",
    "NVIDIA H200 NVL": "h200-nvl",
    "NVIDIA L4": "l4",
    "NVIDIA L40S": "l40s",
    "NVIDIA L40": "l40",
    "NVIDIA A10": "a10",
    "NVIDIA A10G": "a10g",
    "NVIDIA GeForce RTX 3090": "rtx-3090",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "AMD Instinct MI250X": "mi250x",
    "AMD Instinct MI300X": "mi300x",
    "NVIDIA GeForce RTX 2080 Ti": "rtx-2080-ti",
    "Tesla T4": "t4",
    "NVIDIA GB10": "gb10",
    "NVIDIA GeForce RTX 5090": "rtx-5090",
}


@pytest.mark.parametrize("name,key", sorted(REAL_NAMES.items()))
def test_real_device_names_map_to_exactly_one_row(name, key):
    table = load_specs()
    assert table.candidates(name) == [key]
    assert table.match(name).key == key


@pytest.mark.parametrize("name", ["NVIDIA GeForce RTX 3090 Ti", "NVIDIA RTX A6000", "Quadro P100",
                                  "NVIDIA A100-SXM4", "", "cpu", "NVIDIA GeForce RTX 5090 D", "NVIDIA T400",
                                  "NVIDIA GeForce RTX 2080", "NVIDIA GB200"])
def test_unknown_names_get_no_row(name):
    assert load_specs().match(name) is None


def test_dense_peaks_spot_checks():
    t = load_specs()
    # NVIDIA H100 SXM datasheet: 1,979 TFLOPS bf16 *with sparsity* → 989.4 dense.
    assert t.get("h100-sxm").peak_tflops("bf16") == pytest.approx(989.4, rel=1e-3)
    assert t.get("a100-sxm4-80gb").peak_tflops("bf16") == 312
    assert t.get("a100-sxm4-80gb").peak_tflops("tf32") == 156
    assert t.get("v100-sxm2").peak_tflops("fp16") == 125
    assert t.get("v100-sxm2").peak_tflops("bf16") is None  # Volta has no bf16: no MFU
    assert t.get("l40s").peak_tflops("bf16") > 2 * t.get("l4").peak_tflops("bf16")
    assert t.get("mi300x").peak_tflops("bf16") == pytest.approx(1307.4)
    assert t.get("a100-sxm4-40gb").bandwidth_gbs < t.get("a100-sxm4-80gb").bandwidth_gbs


def test_every_row_is_sourced_and_sane():
    t = load_specs()
    assert len(t.devices) >= 20
    for d in t.devices:
        assert re.match(r"https?://", d.source), d.key
        # a row without peaks must say that the vendor publishes no dense figure (GB10)
        assert d.tflops or "no dense peak" in d.notes, d.key
        assert all(v > 0 for v in d.tflops.values()), d.key
        assert d.arch in t.archs, d.key  # every row has an architecture the identity code knows
        assert set(d.tflops) <= set(DTYPES)
        assert d.bandwidth_gbs and d.bandwidth_gbs > 100, d.key
        # tensor peaks are never below the plain fp32 peak
        for k in ("bf16", "fp16"):
            if k in d.tflops:
                assert d.tflops[k] >= d.tflops["fp32"], d.key


def test_parse_errors_name_the_row():
    with pytest.raises(ValueError, match="device #1"):
        parse_specs('[[device]]\nkey="x"\nname="x"\nmatch=["("]\nsource="s"\n')
    with pytest.raises(ValueError, match="unknown dtype"):
        parse_specs('[[device]]\nkey="x"\nname="x"\nmatch=["x"]\nsource="s"\ntflops={fp64=1}\n')


def test_peak_column_follows_dtype_and_tf32():
    assert peak_dtype_for("bf16", tf32_matmul=True) == "bf16"
    assert peak_dtype_for("fp32", tf32_matmul=True) == "tf32"
    assert peak_dtype_for("fp32", tf32_matmul=False) == "fp32"
    with pytest.raises(ValueError):
        peak_dtype_for("int8", tf32_matmul=False)


@pytest.mark.parametrize("name,key", [
    ("Tesla V100-DGXS-32GB", "v100-dgxs"),  # DGX Station: the NVLink V100 (SXM2 peaks)
    ("Tesla V100-DGXS-16GB", "v100-dgxs"),
    ("Tesla V100S-PCIE-32GB", "v100s-pcie"),
])
def test_variant_names_map_to_their_own_row(name, key):
    assert load_specs().candidates(name) == [key] and load_specs().match(name).key == key


def test_dgxs_peaks_are_the_sxm2_figures_and_v100s_differs():
    t = load_specs()
    assert t.get("v100-dgxs").tflops == t.get("v100-sxm2").tflops == {"fp32": 15.7, "fp16": 125}
    assert t.get("v100s-pcie").tflops == {"fp32": 16.4, "fp16": 130}


def test_mig_slices_scale_the_parent_row():
    t = load_specs()
    s = t.match("NVIDIA A100-SXM4-40GB MIG 1g.5gb")
    # 1 of 7 compute slices: 312/7 bf16; 5 of 40 GB: 1555/8 GB/s
    assert s.key == "a100-sxm4-40gb/mig-1g.5gb"
    assert s.tflops["bf16"] == pytest.approx(312 / 7) and s.bandwidth_gbs == pytest.approx(1555 / 8)
    h = t.match("NVIDIA H100 80GB HBM3 MIG 3g.40gb")
    assert h.key == "h100-sxm/mig-3g.40gb" and h.tflops["fp8"] == pytest.approx(1978.9 * 3 / 7)
    assert h.bandwidth_gbs == pytest.approx(3350 / 2)
    assert t.get("h100-sxm/mig-3g.40gb").tflops == h.tflops  # --gpu-spec accepts the derived key
    assert t.match("NVIDIA H100 80GB HBM3 MIG 1g.10gb+me").key == "h100-sxm/mig-1g.10gb"
    # no MIG on Volta, and a profile bigger than the GPU is refused: no guessed peak
    assert t.match("Tesla V100-SXM2-32GB MIG 1g.5gb") is None
    assert t.match("NVIDIA A100-SXM4-40GB MIG 8g.80gb") is None


def test_closest_keys_for_a_mistyped_key_or_an_unknown_name():
    from trainprof.hardware.specs import unknown_key_message, unmatched_device_message

    t = load_specs()
    assert set(t.closest("h100")) == {"h100-sxm", "h100-pcie", "h100-nvl"}
    assert t.closest("a100-sxm-80gb")[0] == "a100-sxm4-80gb"
    msg = unknown_key_message("h100-sxm5")
    assert msg.startswith("--gpu-spec h100-sxm5: no such row; closest: h100-sxm")
    m = unmatched_device_message("NVIDIA H100 80GB HBM2e")
    assert "is not in the spec table" in m and "--gpu-spec h100-" in m and "--peak-tflops" in m


def test_trace_on_an_unlisted_gpu_says_which_keys_to_try():
    from trainprof.jobs.analyze import resolve_roof
    from trainprof.hardware.peaks import PeakOverrides

    roof = resolve_roof("NVIDIA H100 80GB HBM2e", PeakOverrides())
    assert roof.source == "unknown" and not roof.peak_tflops
    assert "--gpu-spec h100-" in roof.hint
    assert resolve_roof("NVIDIA H100 80GB HBM3", PeakOverrides()).hint is None


def test_turing_rows_are_fp16_only_and_consumer_fp16_is_the_fp32_accumulate_rate():
    t = load_specs()
    # Turing whitepaper, RTX 2080 Ti reference: 4,352 cores x 2 x 1.545 GHz = 13.4 fp32;
    # FP16 Tensor with FP32 accumulate 53.8 (half the 107.6 FP16-accumulate rate on GeForce)
    assert t.get("rtx-2080-ti").tflops == {"fp32": 13.4, "fp16": 53.8}
    assert t.get("t4").tflops == {"fp32": 8.1, "fp16": 65}  # T4 datasheet: 8.1 / 65 mixed precision
    assert t.get("rtx-2080-ti").arch == t.get("t4").arch == "sm_75"
    assert not t.archs["sm_75"].bf16 and t.archs["sm_75"].tensor_cores
    # GB10 publishes only a sparse FP4 figure: no peak, the memory roof only
    assert t.get("gb10").tflops == {} and t.get("gb10").bandwidth_gbs == 273


def test_arch_table_assumes_a_row_only_for_one_product_architectures():
    t = load_specs()
    assumed = {a.arch: a.assume for a in t.archs.values() if a.assume}
    assert assumed == {"sm_121": "gb10"}
    # Hopper and CDNA3 span parts with different peaks: their rows differ, none is assumed
    assert {t.get(k).tflops["bf16"] for k in t.rows_of("sm_90")} == {989.4, 756, 835.5, 989.5, 990}
    assert t.rows_of("gfx942") == ["mi300x", "mi325x"]
    # bf16 advice: NVIDIA compute capability >= 8.0, AMD CDNA2 and later
    assert [a for a, i in t.archs.items() if i.bf16 and i.vendor == "nvidia"][0] == "sm_80"
    assert (t.archs["gfx908"].bf16, t.archs["gfx90a"].bf16) == (False, True)
    with pytest.raises(ValueError, match="no device row"):
        parse_specs('[[arch]]\narch="sm_1"\nvendor="nvidia"\nfamily="x"\nassume="nope"\n')
