"""`bench allreduce --link`: each size's busbw as a share of the link's per-direction rate."""

import io

from rich.console import Console

from trainprof.bench import collectives
from trainprof.bench.config import CollectiveConfig
from trainprof.recordtypes.bench import CollectivesBench


def _rows(*_a, **_k):
    # planted: 360 GB/s busbw on NVLink 4 (450 GB/s per direction) = 80%
    return [{"op": "all_reduce", "bytes": 2**30, "dtype": "fp32", "ranks": 8, "iters": 20, "time_s": 0.005,
             "time_max_s": 0.005, "algbw_gbs": 205.7, "busbw_gbs": 360.0}], 0.0


def test_link_share_is_busbw_over_the_links_rate(monkeypatch):
    from trainprof.bench.tables import _allreduce

    monkeypatch.setattr(collectives, "rank_main", _rows)
    out = collectives.run(CollectiveConfig(nproc=8, link="nvlink4").resolved("cuda"), "cuda:0")
    assert out["results"][0]["link_pct"] == 80.0 and out["link"]["gbs"] == 450.0
    con = Console(file=io.StringIO(), width=200)
    _allreduce(CollectivesBench(kind="allreduce", results=out["results"], world_size=8, backend="nccl",
                                link=out["link"]), con)
    assert "80%" in con.file.getvalue() and "NVLink 4" in con.file.getvalue()
    bare = collectives.run(CollectiveConfig(nproc=8).resolved("cuda"), "cuda:0")
    assert "link_pct" not in bare["results"][0] and bare["link"] is None  # never guessed
