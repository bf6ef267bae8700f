"""busbw = algbw · nccl-tests' factor, by hand (NVIDIA/nccl-tests doc/PERFORMANCE.md)."""

import pytest

from trainprof.bench.busbw import algbw, bus_factor, busbw, message_elems
from trainprof.errors import UsageError


@pytest.mark.parametrize("n, want", [(2, 1.0), (4, 1.5), (8, 1.75), (16, 1.875), (3, 4 / 3)])
def test_all_reduce_factor_is_2_n_minus_1_over_n(n, want):
    assert bus_factor("all_reduce", n) == want == 2 * (n - 1) / n


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter"])
@pytest.mark.parametrize("n, want", [(2, 0.5), (4, 0.75), (8, 0.875), (3, 2 / 3)])
def test_gather_and_scatter_factor_is_n_minus_1_over_n(op, n, want):
    assert bus_factor(op, n) == want == (n - 1) / n


def test_one_rank_moves_nothing():
    assert bus_factor("all_reduce", 1) == 0.0 and bus_factor("all_gather", 1) == 0.0


def test_algbw_and_busbw_by_hand():
    # 1 GB in 10 ms: algbw 100 GB/s; all_reduce over 8 ranks: busbw 175 GB/s
    assert algbw(10**9, 0.01) == pytest.approx(100e9)
    assert busbw("all_reduce", 8, 10**9, 0.01) == pytest.approx(175e9)
    assert busbw("all_gather", 4, 10**9, 0.01) == pytest.approx(75e9)
    assert busbw("reduce_scatter", 2, 4096, 1e-6) == pytest.approx(4096e6 * 0.5)


def test_message_layout_follows_nccl_tests_S():
    # all_reduce: S = the buffer every rank holds
    assert message_elems("all_reduce", 4096, 4, 4) == (1024, 1024, 4096)
    # all_gather: S = the gathered output = sendcount·sizeof·n
    assert message_elems("all_gather", 4096, 4, 4) == (256, 1024, 4096)
    # reduce_scatter: S = the input = recvcount·sizeof·n
    assert message_elems("reduce_scatter", 4096, 4, 4) == (1024, 256, 4096)
    # rounded down to whole elements and equal shares
    assert message_elems("all_gather", 4100, 4, 4) == (256, 1024, 4096)


def test_too_small_a_message_is_a_usage_error():
    with pytest.raises(UsageError, match="needs ≥ 16 bytes"):
        message_elems("all_gather", 8, 4, 4)
