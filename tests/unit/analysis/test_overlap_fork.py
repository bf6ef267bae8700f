"""analysis/trace_report.analyze_trace(overlap=True): the graph work in a forked child or on a
second thread gives the serial record. It forks, so it runs in a fresh pytest process
(tests/conftest.py FORK_TESTS, tests/unit/test_fork_fresh.py): an xdist worker has threads."""

import pytest

from trainprof.trace import read_trace

from tests.unit.analysis.test_trace_analysis import DATA


@pytest.mark.parametrize("trace, how", [
    ("real/hta_ddp_2rank_nccl_a100/nccl_data.json.gz", "fork"),
    ("real/hta_resnet_v100_ns_timeunit/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "fork"),
    ("real/hta_ddp_2rank_nccl_a100/nccl_data.json.gz", "thread")])
def test_overlap_gives_the_same_record(trace, how, monkeypatch):
    """The graph work in a forked child (what a lone `analyze` does on Linux; forked.py), or on
    a second thread where no fork is safe, changes nothing in the record, key order and each
    number's int-or-float included (the JSON is written in that order and form)."""
    import os
    import sys

    from trainprof.analysis import trace_report
    from trainprof.analysis.trace_report import analyze_trace
    from trainprof.jsontext import dumps

    forks = []
    if how == "fork":
        if not sys.platform.startswith("linux"):
            pytest.skip("forks only on Linux")
        monkeypatch.delitem(sys.modules, "torch", raising=False)  # conftest imported it; nothing here uses it
        monkeypatch.setattr(trace_report, "spare_core", lambda: True)  # whatever else this machine runs
        fork = os.fork
        monkeypatch.setattr(os, "fork", lambda: forks.append(1) or fork())
    else:
        monkeypatch.setitem(sys.modules, "torch", sys)  # forked.can_fork refuses: the thread
    t = read_trace(DATA / trace)
    serial = analyze_trace(t, file="x")
    overlapped = analyze_trace(t, file="x", overlap=True)
    assert len(forks) == (how == "fork")
    assert dumps(overlapped) == dumps(serial)  # key order included
    assert serial.critical_path and serial.whatif
