"""backends/distributed.end_process_group: destroys the group (after gloo's drain), and is a
no-op without one, so `finish()` paths can call it unconditionally."""

import socket

import torch.distributed as dist

from trainprof.backends import distributed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ends_a_gloo_group_after_the_drain_and_is_a_no_op_after(monkeypatch):
    slept = []
    monkeypatch.setattr(distributed.time, "sleep", slept.append)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    assert dist.is_initialized()
    distributed.end_process_group()
    assert not dist.is_initialized() and slept == [distributed._GLOO_DRAIN_S]
    distributed.end_process_group()  # nothing to end: no error, no sleep
    assert slept == [distributed._GLOO_DRAIN_S]
