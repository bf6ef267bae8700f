"""The collectives table's busbw as a share of the link (seed 002; issue #40), on a real 2-rank
NCCL trace (HTA's DDP trace on A100s, one rank copied into two, tests/integration/planted_job.py).

By hand, from the table `analyze` prints for this job: all_reduce busbw p50 5.755 GB/s, broadcast
3.458 GB/s. Over PCIe 4.0 x16 (31.5 GB/s per direction): 100 · 5.755 / 31.5 = 18.27% and
100 · 3.458 / 31.5 = 10.98% (shown 18% and 11%). Over the A100 SXM4's NVLink 3 (300 GB/s):
1.92%. Able to fail: a link figure quoted both ways (2×), busbw and algbw confused (2× for two
ranks), a share of the wrong link, or a link assumed for a job wider than one node.
"""

from __future__ import annotations

import contextlib
import io
import json

import msgspec
import pytest

import tests.integration.planted_job as pj
from trainprof.analysis.job.link_share import UNKNOWN_NOTE, with_link_share
from trainprof.cli import main
from trainprof.recordtypes.collectives import JobCollectives


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("job")
    pj.write(pj.copies(pj.load(pj.NCCL_A100), 2), folder)
    return folder


@pytest.fixture(scope="module")
def analysed(job_dir, tmp_path_factory):
    """`analyze --link pcie4 --out`, once: (the folder, what the terminal printed)."""
    out = tmp_path_factory.mktemp("an") / "out"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["analyze", str(job_dir), "--link", "pcie4", "--out", str(out)]) == 0
    return out, buf.getvalue()


def _groups(job: dict) -> dict[str, dict]:
    return {g["op"]: g for g in job["groups"]}


def test_link_share_with_the_users_link_in_every_report(analysed):
    out, term = analysed
    job = json.loads((out / "analysis.json").read_text())["multi_rank"]["collectives"]
    g = _groups(job)
    assert g["all_reduce"]["median_busbw_gbs"] == pytest.approx(5.755, abs=0.001)  # the table's figure
    assert g["all_reduce"]["link_pct"] == pytest.approx(18.27, abs=0.01)
    assert g["broadcast"]["link_pct"] == pytest.approx(10.98, abs=0.01)
    assert job["link"]["key"] == "pcie4" and job["link"]["gbs"] == 31.5 and job["link"]["basis"] == "given by --link"
    md = (out / "report.md").read_text("utf-8")
    assert "| 5.76 | 18% |" in md and "| 3.46 | 11% |" in md and "Link: PCIe 4.0 x16, 31.5 GB/s" in md
    assert "busbw p50 of the link" in (out / "report.html").read_text("utf-8")
    assert "link: PCIe 4.0 x16, 31.5 GB/s" in term and "18%" in term


def test_link_from_the_device_within_one_node_and_unknown_beyond(analysed):
    # the same job's collectives without the user's link (analysis/job/link_share.py on the record)
    raw = json.loads((analysed[0] / "analysis.json").read_text())["multi_rank"]["collectives"]
    bare = msgspec.convert({k: v for k, v in raw.items() if k != "link"}, JobCollectives)
    bare = msgspec.structs.replace(
        bare, groups=[msgspec.structs.replace(g, link_pct=msgspec.UNSET) for g in bare.groups]
    )
    # the trace's own device (A100-PG509-200) has no spec row: no share and the note, never a guess
    own = with_link_share(bare, None, None)
    assert own.link is None and UNKNOWN_NOTE in own.notes and own.groups[0].link_pct is msgspec.UNSET
    # named as an SXM4 part: NVLink 3 within one node (2 ranks), 100 · 5.755 / 300 = 1.92%
    sxm = with_link_share(bare, None, "a100-sxm4-40gb")
    assert sxm.link.key == "nvlink3" and "within one node" in sxm.link.basis
    assert _groups(msgspec.to_builtins(sxm))["all_reduce"]["link_pct"] == pytest.approx(1.92, abs=0.01)
    # 16 ranks do not fit in one node: the network is unknown
    wide = with_link_share(msgspec.structs.replace(bare, world_size=16), None, "a100-sxm4-40gb")
    assert wide.link is None and UNKNOWN_NOTE in wide.notes


def test_an_unknown_link_is_one_line_exit_2(job_dir, capsys):
    assert main(["analyze", str(job_dir), "--link", "nvlink9"]) == 2
    err = capsys.readouterr().err
    assert "--link: unknown link 'nvlink9': one of nvlink1" in err and "Traceback" not in err
