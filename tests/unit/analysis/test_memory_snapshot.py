"""Memory by category (memory profiler timeline) and allocator fragmentation (snapshot)."""

import pytest

from trainprof.analysis.run.memory_snapshot import CATEGORIES, fragmentation, peak_by_category, peak_stats


def _row(**by):
    return [0] + [by.get(c, 0) for c in CATEGORIES]


def test_peak_is_the_row_with_the_largest_total():
    times = [1000, 1005, 1010]
    sizes = [_row(parameters=100, optimizer_state=200),
             _row(parameters=100, optimizer_state=200, activations=50, temporaries=5),
             _row(parameters=100, optimizer_state=200, gradients=100)]  # 400 > 355
    r = peak_by_category(times, sizes)
    assert r["peak_bytes"] == 400 and r["peak_time_us"] == 10
    assert r["at_peak"]["gradients"] == 100 and r["at_peak"]["activations"] == 0
    assert r["max"]["activations"] == 50 and r["max"]["temporaries"] == 5


def test_timeline_of_another_shape_is_refused():
    with pytest.raises(ValueError, match="columns"):
        peak_by_category([0], [[0, 1, 2]])
    with pytest.raises(ValueError, match="empty"):
        peak_by_category([], [])


def test_fragmentation_by_hand():
    snap = {"segments": [
        {"total_size": 100, "allocated_size": 60,
         "blocks": [{"size": 60, "state": "active_allocated"}, {"size": 40, "state": "inactive"}]},
        {"total_size": 100, "allocated_size": 80,
         "blocks": [{"size": 10, "state": "inactive"}, {"size": 80, "state": "active_allocated"},
                    {"size": 10, "state": "inactive"}]},
    ]}
    f = fragmentation(snap)
    assert f["reserved_bytes"] == 200 and f["allocated_bytes"] == 140 and f["free_bytes"] == 60
    assert f["fragmentation"] == pytest.approx(0.3)
    assert f["largest_free_block_bytes"] == 40
    assert f["external_fragmentation"] == pytest.approx(1 - 40 / 60)
    assert fragmentation({"segments": []})["fragmentation"] == 0.0


def test_allocator_peaks():
    s = peak_stats({"reserved_bytes.all.peak": 1000, "allocated_bytes.all.peak": 750, "num_ooms": 0})
    assert s["peak_unused_reserved_fraction"] == pytest.approx(0.25) and s["num_ooms"] == 0
