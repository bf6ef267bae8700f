"""`run --strategy tp|pp --dp/--tp/--pp`: the layout resolved and checked without launching a
rank (workload/layout_flags.py), and each refusal one line with exit 2."""

from __future__ import annotations

import pytest

from trainprof.cli import main
from trainprof.errors import UsageError
from trainprof.workload.config import TrainConfig
from trainprof.workload.layout_flags import layout_of, rank_share
from trainprof.workload.mesh import Layout


def _lay(world: int, **kw) -> Layout | None:
    return layout_of(TrainConfig(**kw).resolved(), world)


def test_strategies_take_the_ranks_left():
    assert _lay(4) is None and _lay(4, strategy="fsdp") is None  # DDP/FSDP over every rank: no mesh
    assert _lay(4, strategy="tp") == Layout(dp=1, tp=4, pp=1, microbatches=1)
    assert _lay(4, strategy="pp", dp=2) == Layout(dp=2, tp=1, pp=2, microbatches=4)
    assert _lay(8, tp=2, pp=2, pp_schedule="1f1b", pp_microbatches=8) == Layout(
        dp=2, tp=2, pp=2, schedule="1f1b", microbatches=8
    )
    assert _lay(4, strategy="tp", pp=2) == Layout(dp=1, tp=2, pp=2)


@pytest.mark.parametrize(
    ("world", "kw", "needle"),
    [
        (2, {"tp": 3}, "--tp 3 × --pp 1 does not divide the ranks (--nproc 2)"),
        (4, {"dp": 2, "tp": 4}, "--dp 2 × --tp 4 × --pp 1 = 8 must equal the ranks (--nproc 4)"),
        (3, {"tp": 3}, "--tp 3 must divide the 4 attention heads"),
        (8, {"pp": 8}, "--pp 8 must divide the 4 blocks"),
        (2, {"pp": 2, "micro_batch": 6}, "--pp-microbatches 4 must divide the per-replica batch (--micro-batch 6)"),
        (2, {"pp": 2, "grad_accum": 2}, "--grad-accum with --pp"),
        (2, {"strategy": "fsdp", "tp": 2}, "--strategy fsdp with --dp/--tp/--pp"),
        (3, {"strategy": "tp", "pp": 2}, "--strategy tp: 3 ranks (--nproc) do not divide"),
        (2, {"tp": 2, "dtype": "fp16"}, "--dtype fp16 with --tp/--pp"),
    ],
)
def test_layouts_that_cannot_work_are_refused(world, kw, needle):
    with pytest.raises(UsageError) as e:
        _lay(world, **kw)
    assert needle in str(e.value)


def test_refused_before_launch_one_line_exit_2(tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["run", "--nproc", "2", "--tp", "2", "--pp", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "--tp 2 × --pp 2 does not divide the ranks (--nproc 2)" in err
        and "Traceback" not in err
    )
    assert not out.exists()
    assert main(["run", "--pp-schedule", "zigzag"]) == 2 and "--pp-schedule" in capsys.readouterr().err
    assert main(["run", "--tp", "0"]) == 2 and "--tp" in capsys.readouterr().err


def test_a_rank_computes_its_share_of_the_flops():
    f = {
        "model_flops_per_step": 120.0,
        "hardware_flops_per_step": 120.0,
        "analytic_flops_per_step": 60.0,
        "analytic_hardware_flops_per_step": 60.0,
        "method": "x",
    }
    g = rank_share(f, Layout(dp=2, tp=2, pp=3))
    assert g["model_flops_per_step"] == 20.0 and g["analytic_flops_per_step"] == 10.0 and g["method"] == "x"


def test_the_layout_is_a_typed_field_of_run_json():
    import json
    from pathlib import Path

    import msgspec

    from trainprof.recordtypes.run import Layout as LayoutRecord
    from trainprof.recordtypes.run import run_from_dict

    d = json.loads((Path(__file__).parents[2] / "data" / "reports" / "cpu_run" / "run.json").read_text())
    assert run_from_dict(d).layout is msgspec.UNSET  # an older run.json: no layout, re-encoded as written
    lay = {"dp": 2, "tp": 1, "pp": 2, "strategy": "pp", "schedule": "1f1b", "microbatches": 4}
    rec = run_from_dict({**d, "layout": lay})
    assert rec.layout == LayoutRecord(dp=2, tp=1, pp=2, strategy="pp", schedule="1f1b", microbatches=4)
    assert rec.to_dict()["layout"] == lay
    with pytest.raises(msgspec.ValidationError, match=r"layout\.tp"):
        run_from_dict({**d, "layout": {**lay, "tp": "two"}})
