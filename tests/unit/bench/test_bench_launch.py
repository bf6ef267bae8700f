"""Ranks run under torchrun (jobs/torchrun.py): a rank that dies ends the job at once, named;
a hung job stops at the timeout; a busy port is one line; the relaunch's command line."""

import signal
import socket
import sys
import time

import pytest

from trainprof.jobs.torchrun import RankFailed, _Summary, check_port, command, free_port, relaunch, strip_flag
from trainprof.errors import UsageError

# Run by torchrun on 2 ranks. "die": rank 1 dies hard after joining the group while rank 0
# waits outside any collective (only the launcher can end the job); "hang": nobody ends.
JOB = """
import os, sys, time
if sys.argv[1] == "hang":
    time.sleep(600)
import torch, torch.distributed as dist
dist.init_process_group("gloo")
dist.all_reduce(torch.zeros(8))
if dist.get_rank() == 1:
    with open(sys.argv[2], "w") as f:
        f.write(repr(time.time()))
    os._exit(3)  # no exception, no cleanup: a crash or the OOM killer looks like this
time.sleep(600)
"""


@pytest.mark.slow  # a 2-rank torchrun job in fresh processes
def test_a_dying_rank_ends_the_job_and_is_named(tmp_path, capsys):
    (tmp_path / "job.py").write_text(JOB)
    died = tmp_path / "died"
    t0 = time.monotonic()
    with pytest.raises(RankFailed) as e:
        relaunch([str(tmp_path / "job.py"), "die", str(died)], 2, module=None, timeout_s=60, what="test")
    ended = time.time()
    assert str(e.value) == ("distributed test on 2 ranks failed: rank 1 exited with code 3 "
                            "(torchrun exit code 1; its output is above)")
    assert e.value.rank == 1 and e.value.ranks == [1] and e.value.exit_code == 1
    assert "Root Cause" in capsys.readouterr().err  # torchrun's own summary passed through
    # torchrun's agent polls every 0.1 s and SIGTERMs the survivor: about 1 s here
    assert ended - float(died.read_text()) < 10
    assert time.monotonic() - t0 < 40  # not the 60 s timeout, nor gloo's 30 min default


@pytest.mark.slow  # waits out a 2-rank torchrun job's 15 s timeout
def test_a_hung_job_stops_at_the_timeout(tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    t0 = time.monotonic()
    # 15 s: torchrun must have spawned both ranks before the timeout for them to be named;
    # on a loaded 2-core machine importing torch in the agent alone took more than 3 s.
    with pytest.raises(RankFailed, match=r"^distributed test on 2 ranks: ranks 0, 1 still running after "
                       r"the 15 s timeout; stopped all 2 ranks$") as e:
        relaunch([str(tmp_path / "job.py"), "hang"], 2, module=None, timeout_s=15, what="test")
    assert e.value.ranks == [0, 1] and time.monotonic() - t0 < 35


SUMMARY = """\
============================================================
job.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-22_04:22:22
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : {code0} (pid: 15935)
  error_file: <N/A>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-22_04:22:22
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 15936)
============================================================
"""


def test_summary_names_the_root_cause_not_the_ranks_torchrun_stopped():
    s = _Summary()
    text = SUMMARY.format(code0=-signal.SIGTERM)
    s.feed(text[:200])  # arrives in arbitrary chunks
    s.feed(text[200:])
    e = s.error("run", 2, 1)
    assert str(e) == ("distributed run on 2 ranks failed: rank 1 was killed by SIGKILL "
                      "(torchrun exit code 1; its output is above)")
    s = _Summary()
    s.feed(SUMMARY.format(code0=1))  # rank 0 raised on its own: named too
    assert "rank 1 was killed by SIGKILL; rank 0 failed too (" in str(s.error("run", 2, 1))
    assert str(_Summary().error("run", 4, 1)).startswith(
        "distributed run on 4 ranks failed: a rank exited with an error")
    s = _Summary()
    s.feed("torch.distributed.elastic.multiprocessing.api.SignalException: Process 7 got signal: 2\n")
    assert "failed: torchrun got SIGINT and stopped the ranks (" in str(s.error("run", 2, 1))


def test_command_is_torchruns_and_strip_flag():
    import torch.distributed.run as tr

    argv = strip_flag(["bench", "allreduce", "--nproc", "4", "--sizes", "4K", "--nproc=3"], "--nproc")
    assert argv == ["bench", "allreduce", "--sizes", "4K"]
    cmd = command(argv, 4)
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    a = tr.get_args_parser().parse_args(cmd[3:])  # flags torchrun knows, as it parses them
    assert a.standalone and a.nproc_per_node == "4" and a.monitor_interval == 0.1
    assert a.module and a.training_script == "trainprof" and a.training_script_args == argv
    a = tr.get_args_parser().parse_args(command(argv, 2, master_addr="127.0.0.1", master_port=29555)[3:])
    assert not a.standalone and (a.rdzv_backend, a.rdzv_endpoint, a.nnodes) == ("c10d", "127.0.0.1:29555", "1")


def test_busy_port_is_a_usage_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(UsageError, match=rf"--master-port {port}: 127.0.0.1:{port} is already in use"):
            check_port("127.0.0.1", port)
        with pytest.raises(UsageError, match="already in use"):  # before torchrun starts
            relaunch(["bench", "allreduce"], 2, master_port=port)
    check_port("127.0.0.1", free_port("127.0.0.1"))  # a free one passes
