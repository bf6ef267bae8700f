"""Rank supervision: a rank that dies ends the job at once, named; a busy port is one line."""

import os
import pickle
import signal
import socket
import time

import pytest

from trainprof.bench.launch import RankFailed, _describe, check_port, free_port, run_ranks
from trainprof.errors import UsageError


def _die_or_wait(rank: int, port: int) -> None:
    """Rank 1 dies hard after joining; rank 0 is left blocked in a collective."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    x = torch.zeros(8)
    dist.all_reduce(x)
    if rank == 1:
        os._exit(3)  # no exception, no cleanup: a crash or the OOM killer looks like this
    while True:
        dist.all_reduce(x)
        time.sleep(0.01)


def _hang(rank: int) -> None:
    time.sleep(600)


def test_a_dying_rank_ends_the_job_and_is_named():
    t0 = time.monotonic()
    with pytest.raises(RankFailed) as e:
        run_ranks(_die_or_wait, 2, (free_port("127.0.0.1"),), timeout_s=60)
    assert str(e.value) == "rank 1 exited with code 3; stopped the other rank"
    assert e.value.rank == 1 and e.value.exit_code == 1
    assert time.monotonic() - t0 < 30  # not the 60 s timeout, nor gloo's 30 min default


def test_a_hung_job_stops_at_the_timeout():
    t0 = time.monotonic()
    with pytest.raises(RankFailed, match=r"ranks 0, 1 still running after the 3 s timeout; stopped all 2"):
        run_ranks(_hang, 2, (), timeout_s=3)
    assert time.monotonic() - t0 < 15


class _Proc:
    def __init__(self, exitcode):
        self.exitcode = exitcode


def _trace(tmp_path, rank, text):
    path = tmp_path / f"err{rank}"
    path.write_bytes(pickle.dumps(text))
    return str(path)


def test_describe_prefers_the_rank_that_died_over_peers_that_raised(tmp_path):
    files = [_trace(tmp_path, 0, "Traceback...\nRuntimeError: Connection closed by peer"),
             str(tmp_path / "none1"), str(tmp_path / "none2")]
    err = _describe([0, 2], [_Proc(1), _Proc(None), _Proc(-signal.SIGKILL)], files)
    assert str(err) == "rank 2 was killed by SIGKILL; stopped the other 2 ranks"
    err = _describe([0], [_Proc(1), _Proc(None), _Proc(None)], files)
    assert str(err) == "rank 0 failed: RuntimeError: Connection closed by peer; stopped the other 2 ranks"
    assert "Connection closed" in err.detail


def test_describe_strips_our_error_module(tmp_path):
    files = [str(tmp_path / "none0"), _trace(tmp_path, 1, "Traceback\ntrainprof.errors.UsageError: bad")]
    assert str(_describe([1], [_Proc(None), _Proc(1)], files)) == "rank 1 failed: UsageError: bad; stopped the other rank"


def test_busy_port_is_a_usage_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(UsageError, match=rf"--master-port {port}: 127.0.0.1:{port} is already in use"):
            check_port("127.0.0.1", port)
    check_port("127.0.0.1", free_port("127.0.0.1"))  # a free one passes
