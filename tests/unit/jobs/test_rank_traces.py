"""run --nproc N --profile: rank 0 takes the other ranks' finished traces, or names the missing one."""

import pytest

from trainprof.errors import ResourceError
from trainprof.jobs import run as jobrun


def test_finished_traces_move_into_the_stage_and_the_hidden_folder_goes(tmp_path):
    out, stage = tmp_path / "run", tmp_path / ".run.stage"
    (stage / "traces").mkdir(parents=True)
    shared = jobrun.rank_traces_dir(out)
    shared.mkdir()
    for r in (1, 2):
        (shared / f"rank{r}.json.gz").write_bytes(b"t%d" % r)
    jobrun.collect_rank_traces(out, stage, world=3)
    assert sorted(p.name for p in (stage / "traces").iterdir()) == ["rank1.json.gz", "rank2.json.gz"]
    assert (stage / "traces" / "rank2.json.gz").read_bytes() == b"t2"
    assert not shared.exists()


def test_a_rank_that_never_finishes_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(jobrun, "RANK_TRACE_WAIT_S", 0.3)
    out, stage = tmp_path / "run", tmp_path / ".run.stage"
    (stage / "traces").mkdir(parents=True)
    shared = jobrun.rank_traces_dir(out)
    shared.mkdir()
    (shared / "rank1.json.gz").write_bytes(b"t1")
    (shared / "rank2.part.json.gz").write_bytes(b"half")  # still being written
    with pytest.raises(ResourceError, match=r"no trace from rank2\.json\.gz after 0\.3 s"):
        jobrun.collect_rank_traces(out, stage, world=3)
