"""others_cpu_share = (Δbusy − Δself) / (Δwall · cores), with scripted samples."""

import os

import pytest

from trainprof.bench import contention
from trainprof.bench.contention import Contention, _Sample


def test_share_of_other_processes(monkeypatch):
    cores = os.cpu_count() or 1
    # 10 s wall; all cores busy 10·cores·0.5 s; we used 2 s of it → others = 5·cores − 2
    samples = iter([_Sample(0.0, 100.0, 1.0), _Sample(10.0, 100.0 + 5.0 * cores, 3.0)])
    monkeypatch.setattr(contention, "_sample", lambda: next(samples))
    with Contention() as c:
        pass
    assert c.others_cpu_share == pytest.approx(round((5.0 * cores - 2.0) / (10.0 * cores), 3))


def test_unknown_without_proc_stat(monkeypatch):
    monkeypatch.setattr(contention, "_sample", lambda: None)
    with Contention() as c:
        pass
    assert c.others_cpu_share is None


def test_real_sample_is_sane():
    s = contention._sample()
    if s is None:
        pytest.skip("no /proc/stat")
    assert s.busy_s > 0 and s.self_s > 0
