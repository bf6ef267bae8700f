"""The reference table (hardware/references.toml): every row sourced, bands in order, links."""

import pytest

from trainprof.hardware import references as ref


def test_every_reference_has_a_source_and_bands_ascend():
    t = ref.table()
    assert all(lk["source"] for lk in t["link"]) and all(e["source"] for e in t["ettr"])
    froms = [b["from"] for b in t["mfu_band"]]
    assert froms == sorted(froms) and froms[0] == 0.0


def test_bands_tables_and_stop_criterion():
    assert ref.mfu_band(0.55).startswith("well optimised") and ref.mfu_band(0.1).startswith("low")
    assert "1T 56.3%/57.0%" in ref.mfu_table_text()
    assert "Llama 3.1" in ref.ettr_text() and "97%" in ref.ettr_text()
    assert "unlikely to pay" in ref.stop_criterion(75.0) and "room left" in ref.stop_criterion(40.0)
    assert ref.stop_criterion(None) is None


def test_link_fraction_is_busbw_over_the_per_direction_rate():
    # 360 GB/s bus bandwidth on NVLink 4 (450 GB/s each way) is 80% of the link
    assert ref.link_fraction(360.0, ref.link("nvlink4")) == pytest.approx(0.8)
    assert ref.link("PCIe5").gbs == 63.0
    assert ref.link_fraction(10.0, None) is None
    with pytest.raises(ValueError, match="unknown link"):
        ref.link("nvlink9")
