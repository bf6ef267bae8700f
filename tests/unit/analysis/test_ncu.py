"""Nsight Compute CSV import and command, on a fixture built from NVIDIA's metric names.

Fixture (tests/data/ncu/raw_page.csv): two launches of a bf16 GEMM, each 1,000,000 ns,
40 MB read + 10 MB written, 1,000 FFMA + 5e11 tensor ops; one fp32 add kernel, 20,000 ns,
16 + 8 MB, 2e6 FADD. Device "NVIDIA H100 80GB HBM3" (989.4 bf16 TFLOP/s, 3350 GB/s).
"""

import json
from pathlib import Path

import pytest

from trainprof.analysis.cost.ncu import kernel_regex, ncu_command, ncu_points, parse_ncu_csv
from trainprof.analysis.cost.roofline import Roof
from trainprof.cli import main
from trainprof.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = Roof({"fp32": 66.9, "tf32": 494.7, "bf16": 989.4}, 3350.0, "datasheet:h100-sxm")


def test_parse_units_and_flops_by_hand():
    ks = parse_ncu_csv((DATA / "ncu" / "raw_page.csv").read_text())
    assert len(ks) == 3 and ks[0].device == "NVIDIA H100 80GB HBM3"
    g = ks[0]
    assert g.time_us == 1000.0 and g.dram_bytes == 50e6
    assert g.flops == {"fp32": 2000.0, "tensor_bf16": 5e11} and g.dtype == "bf16"
    assert ks[2].flops == {"fp32": 2e6} and ks[2].dtype == "fp32"


def test_points_by_hand():
    pts = ncu_points(parse_ncu_csv((DATA / "ncu" / "raw_page.csv").read_text()), H100)
    gemm, add = pts  # sorted by device time
    assert gemm.count == 2 and gemm.device_time_us == 2000.0
    assert gemm.achieved_tflops == pytest.approx((5e11 + 2000) * 2 / 2e-3 / 1e12)
    assert gemm.intensity == pytest.approx((5e11 + 2000) / 5e7)
    assert gemm.attainable_tflops == 989.4 and gemm.bound == "compute" and gemm.tensor_core
    assert add.intensity == pytest.approx(2e6 / 24e6)
    assert add.attainable_tflops == pytest.approx(2e6 / 24e6 * 3350 / 1e3)
    assert add.achieved_gbs == pytest.approx(1200.0) and add.bound == "memory"


def test_bad_csv_is_an_input_error():
    with pytest.raises(InputError, match="Kernel Name"):
        parse_ncu_csv("a,b\n1,2\n", "x.csv")
    with pytest.raises(InputError, match="gpu__time_duration"):
        parse_ncu_csv('"ID","Kernel Name"\n"0","k"\n', "x.csv")


def test_command_targets_the_top_kernels():
    collect, export = ncu_command([{"name": "void foo<int>(float*)", "count": 10},
                                   {"name": "ampere_sgemm_128x64_nn", "count": 30}], steps=5, program="python t.py")
    assert "--launch-skip 8 --launch-count 8" in collect  # one step's worth of their launches
    assert "regex:^(foo<int>\\(float\\*\\)|ampere_sgemm_128x64_nn)" in collect
    assert "--section SpeedOfLight_RooflineChart" in collect and "dram__bytes_read.sum" in collect
    assert collect.endswith("-- python t.py") and "--csv --page raw --print-units base" in export
    assert kernel_regex(["a b"]) == "regex:^(a b)"


def test_cli_analyze_with_ncu(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["analyze", str(DATA / "traces" / "idle_causes.json"), "--ncu", str(DATA / "ncu" / "raw_page.csv"),
                 "--out", str(out), "--no-plots"]) == 0
    a = json.loads((out / "analysis.json").read_text())
    assert a["ncu"]["device_name"] == "NVIDIA H100 80GB HBM3"
    assert a["ncu"]["roofline"]["source"] == "datasheet:h100-sxm" and len(a["ncu"]["points"]) == 2
    assert "Nsight Compute" in capsys.readouterr().out
    assert main(["analyze", str(DATA / "traces" / "idle_causes.json"), "--ncu", str(tmp_path / "none.csv")]) == 2
    assert "--ncu" in capsys.readouterr().err


def test_cli_ncu_command(capsys):
    assert main(["ncu-command", str(DATA / "traces" / "idle_causes.json"), "--top", "2"]) == 0
    out = capsys.readouterr().out
    collect = next(line for line in out.splitlines() if line.startswith("ncu --target-processes"))
    # the two longest kernels of the trace (300 and 280 µs), not the 250 µs all-reduce
    assert "ampere_sgemm_128x64_nn" in collect and "sm80_xmma_gemm" in collect and "nccl" not in collect
    assert "--launch-skip 1 --launch-count 1" in collect  # 2 launches over 2 steps
    assert "trainprof analyze" in out
