"""The CPU matmul peak never draws from torch's global random stream (it also runs inside
`trainprof run`, and ran inside the user's program before #37): a private generator."""

import torch

from trainprof.backends.cpu import _bench_matmul


def test_the_matmul_benchmark_leaves_the_global_stream_where_it_was():
    torch.manual_seed(123)
    expected = torch.rand(4)  # the next draw of an untouched stream
    torch.manual_seed(123)
    _bench_matmul("fp32", n=64, budget_s=0.0)
    assert torch.equal(torch.rand(4), expected)
