"""Flag parsing and config validation: one clear line naming the flag."""

import pytest

from trainprof.bench.config import (BandwidthConfig, CollectiveConfig, DataloaderConfig, MatmulConfig,
                                    ShapesConfig)
from trainprof.bench.parse import human_bytes, parse_bytes, parse_choices, parse_shapes, parse_sizes
from trainprof.errors import UsageError


def test_sizes_use_binary_units_like_nccl_tests():
    assert parse_sizes("4K,1M,1.5M,2G,100,256MiB", "--sizes") == (
        4096, 2**20, 3 * 2**19, 2 * 2**30, 100, 256 * 2**20)
    assert human_bytes(4096) == "4K" and human_bytes(3 * 2**19) == "1.5M" and human_bytes(100) == "100B"
    for bad in ("", "1X", "-4K", "0", "4K,,8K"):
        with pytest.raises(UsageError, match="--sizes"):
            parse_sizes(bad, "--sizes") if "," in bad else parse_bytes(bad, "--sizes")


def test_shapes_are_n_or_m_x_n_x_k():
    assert parse_shapes("512, 64x128x256,512", "--sizes") == ((512, 512, 512), (64, 128, 256))
    for bad in ("12x3", "axbxc", "0", "1x2x3x4"):
        with pytest.raises(UsageError, match="--sizes"):
            parse_shapes(bad, "--sizes")


def test_choices_name_the_bad_item():
    assert parse_choices("FP32,bf16", "--dtype", ("fp32", "bf16")) == ("fp32", "bf16")
    with pytest.raises(UsageError, match="--dtype fp64: expected one or more of fp32,bf16"):
        parse_choices("fp32,fp64", "--dtype", ("fp32", "bf16"))


def test_defaults_depend_on_the_device():
    cpu, gpu = MatmulConfig().resolved("cpu"), MatmulConfig().resolved("cuda", fp8=True)
    assert cpu.dtypes == ("fp32", "bf16") and cpu.ops == ("mm", "linear")
    assert max(s[0] for s in cpu.shapes) <= 2048
    assert gpu.dtypes == ("fp32", "tf32", "bf16", "fp16", "fp8") and gpu.ops == ("mm",)
    assert "fp8" not in MatmulConfig().resolved("cuda", fp8=False).dtypes
    assert BandwidthConfig().resolved("cpu").sizes[-1] == 256 * 2**20
    assert DataloaderConfig().resolved("cpu").pin_memory == (False,)
    assert DataloaderConfig().resolved("cuda").pin_memory == (False, True)
    assert ShapesConfig().resolved("cpu").dtype == "fp32" and ShapesConfig().resolved("cuda").dtype == "bf16"


@pytest.mark.parametrize("make, kind, msg", [
    (lambda: MatmulConfig(iters=0), "cpu", r"bench.matmul.iters \(--iters\) must be > 0"),
    (lambda: MatmulConfig(dtypes=("tf32",)), "cpu", r"bench.matmul.dtypes \(--dtype\) tf32 is a GPU"),
    (lambda: MatmulConfig(dtypes=("fp8",)), "cuda", r"--dtype\) fp8: this device"),
    (lambda: MatmulConfig(dtypes=("fp8",), shapes=((100, 128, 128),)), "cpu", "fp8"),
    (lambda: CollectiveConfig(nproc=1), "cpu",
     r"bench.allreduce.nproc \(--nproc\) must be ≥ 2: collectives need ≥ 2 ranks"),
    (lambda: CollectiveConfig(master_port=70000), "cpu", r"--master-port\) must be in 0..65535"),
    (lambda: CollectiveConfig(timeout_s=0), "cpu", r"\(--timeout\) must be > 0"),
    (lambda: CollectiveConfig(link="nvlink9"), "cpu", r"\(--link\) unknown link 'nvlink9'"),
    (lambda: DataloaderConfig(pin_memory=(True,)), "cpu", r"\(--pin-memory\) on: pinned memory"),
    (lambda: DataloaderConfig(batches=1), "cpu", r"--batches\) must be ≥ 2"),
    (lambda: ShapesConfig(tokens=100, seq_len=64), "cpu", r"--tokens\) 100 must be a multiple of --seq-len 64"),
])
def test_validation_names_field_and_flag(make, kind, msg):
    # a value the dataclass refuses on its own fails at construction (before any folder); one
    # that depends on the device fails in resolved(kind): either way one line naming the flag
    with pytest.raises(UsageError, match=msg):
        make().resolved(kind)
