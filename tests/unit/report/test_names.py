"""Short names (report/names.py) and figure paths (report/figures.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainprof.report import figures
from trainprof.report.names import denoise, short_name, short_names

# Two real kernels of tests/data/traces/real/hta_ddp_2rank_nccl_a100 that differ only in a
# template argument (128 vs 32): cut at 38 characters both read `cudnn::bn_bw_1C11_kernel_new<float, f…`.
BN = ["void cudnn::bn_bw_1C11_kernel_new<float, float, float2, {}, true, 1>(float, float, float, float, "
      "cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, "
      "float*, float*, float const*, float const*, float)".format(n) for n in (128, 32)]


def test_look_alike_kernels_keep_the_part_that_tells_them_apart():
    a, b = short_names(BN, 38)
    assert a != b and len(a) <= 38 and len(b) <= 38
    # the head, then the template argument where they part
    assert a.startswith("cudnn::bn_bw_1C11_") and "…128, true" in a
    assert b.startswith("cudnn::bn_bw_1C11_") and "…32, true" in b


def test_short_and_equal_names():
    assert short_names(["aten::mm", "aten::add_"], 38) == ["aten::mm", "aten::add_"]
    # one operator at two shapes (roofline points): equal names stay equal, the shapes tell them apart
    assert short_names(["aten::mm", "aten::mm"], 38) == ["aten::mm", "aten::mm"]
    # a long name alone is cut with an ellipsis; the noise every renderer drops is dropped
    assert short_name("void at::native::" + "x" * 60, 20) == "x" * 19 + "…"
    assert denoise("void (anonymous namespace)::k<at::native::F>") == "k<F>"


@given(st.lists(st.text(alphabet="ab<>, _:0123456789", min_size=0, max_size=80), max_size=8),
       st.integers(min_value=8, max_value=60))
def test_different_names_never_shorten_alike(names, width):
    out = short_names(names, width)
    assert len(out) == len(names) and all(len(s) <= width for s in out)
    clean = [denoise(n) for n in names]
    for i in range(len(names)):
        for j in range(len(names)):
            assert (out[i] == out[j]) == (clean[i] == clean[j]), (names[i], names[j], out[i], out[j])
    assert out == short_names(names, width)  # deterministic


def test_resolve_reads_a_field_back_by_its_path():
    rec = {"analysis": {"ranks": [{"critical_path": {"steps": [{"share_pct": {"kernel:gemm": 41.5}}]},
                                   "top_ops": [{"total_us": 12.0}]}]}}
    assert figures.resolve(rec, "analysis.ranks[0].top_ops[0].total_us") == 12.0
    path = "analysis.ranks[0].critical_path.steps[0].share_pct" + figures.key("kernel:gemm")
    assert figures.resolve(rec, path) == 41.5
    with pytest.raises(KeyError):
        figures.resolve(rec, "analysis.ranks[0].nothing")


def test_show_formats_one_way_and_captures_what_it_showed():
    assert figures.show(336419.67, "us", "x") == "336.4 ms"
    assert figures.show(999.94, "us", "x") == "999.9 µs"
    assert figures.show(12_345_678.0, "us", "x") == "12.35 s"  # from 10 s up, seconds (as units.ms)
    assert figures.show(None, "pct_value", "x") == "—"
    with figures.capture() as shown:
        figures.show(4.753, "pct_value", "analysis.ranks[0].temporal_breakdown.communication_pct")
    assert [(s.field, s.value, s.text) for s in shown] == [
        ("analysis.ranks[0].temporal_breakdown.communication_pct", 4.753, "4.8%")]
    figures.show(1.0, "pct_value", "y")
    assert len(shown) == 1  # nothing is captured outside the block


def test_no_two_quantities_share_a_label():
    labels = list(figures.LABELS.values())
    assert len(labels) == len(set(labels))
    # the three communication figures are told apart by name, and the windows are named: the idle
    # causes are the gaps of the temporal breakdown's window (analysis/timeline/idle.py), not the whole trace's
    assert "HTA's window" in figures.LABELS["temporal"] and "HTA's window" in figures.LABELS["idle"]
    assert "whole trace" in figures.LABELS["communication"]
