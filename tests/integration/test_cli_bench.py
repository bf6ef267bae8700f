"""`trainprof bench KIND` end to end on CPU with tiny settings (each a few seconds at most)."""

from __future__ import annotations

import io
import json
import socket

import pytest
from rich.console import Console

from trainprof.bench.tables import print_bench
from trainprof.recordtypes.base import load
from trainprof.recordtypes.bench import Bench
from trainprof.cli import main

ENV_KEYS = {"device", "device_kind", "torch", "threads", "date", "benchmark_version"}


def _bench(tmp_path, capsys, *argv):
    out = tmp_path / "b"
    rc = main(["bench", *argv, "--device", "cpu", "--out", str(out), "--json"])
    assert rc == 0
    rec = json.loads((out / "bench.json").read_text())
    assert json.loads(capsys.readouterr().out) == rec  # --json prints exactly the file
    assert rec["schema"] == "trainprof.bench/1" and rec["kind"] == argv[0]
    assert ENV_KEYS <= set(rec["env"]) and rec["env"]["device_kind"] == "cpu"
    assert rec["env"]["benchmark_version"] >= 1 and isinstance(rec["results"], list) and rec["results"]
    assert sorted(p.name for p in out.iterdir()) == [".trainprof-manifest.json", "bench.json"]  # no temp files
    text = io.StringIO()
    # the table renders from the record alone, read back through its Struct (recordtypes/bench.py)
    print_bench(load(out / "bench.json", Bench), Console(file=text, width=150))
    assert rec["env"]["device"].strip() in text.getvalue()
    return rec


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("trainprof: error: ") and err.count("\n") == 1, err
    return err


def test_matmul_records_the_cpu_peak(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRAINPROF_CACHE_DIR", str(tmp_path / "cache"))
    # this machine is shared: its load and a real quick check would decide whether the peak is kept
    # (backends/cpu_peak.py, tested there); here a quiet machine whose quick check agrees
    from trainprof.backends import cpu, cpu_peak

    class Quiet:
        load = cpu_peak.Load(0.0, 0.0)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    monkeypatch.setattr(cpu_peak, "LoadProbe", Quiet)
    monkeypatch.setattr(cpu, "_quick_matmul", lambda dtype: 1.0)
    rec = _bench(tmp_path, capsys, "matmul", "--sizes", "64,96x64x128", "--iters", "3")
    assert rec["config"]["dtypes"] == ["fp32", "bf16"] and len(rec["results"]) == 2 * 2 * 2
    assert {"dtype", "op", "shape", "m", "n", "k", "flops", "iters", "mean_s", "median_s",
            "tflops_mean", "tflops_median", "tflops_max"} <= set(rec["results"][0])
    assert set(rec["best"]) == {"fp32", "bf16"} and rec["best"]["fp32"]["shape"] in ("64x64x64", "96x64x128")

    from trainprof.backends.cpu import measured_matmul_tflops

    assert measured_matmul_tflops("fp32") == rec["best"]["fp32"]["best_tflops"]
    assert rec["recorded"]["tflops"]["bf16"] == measured_matmul_tflops("bf16")


def test_matmul_table_and_no_record(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRAINPROF_CACHE_DIR", str(tmp_path / "cache"))
    rc = main(["bench", "matmul", "--device", "cpu", "--sizes", "32", "--dtype", "fp32", "--op", "mm",
               "--iters", "3", "--no-record", "--out", str(tmp_path / "t")])
    assert rc == 0
    text = capsys.readouterr().out
    assert "best fp32:" in text and "32x32x32" in text and "bench.json" in text
    assert not (tmp_path / "cache").exists()
    # the same folder again: never overwritten
    assert main(["bench", "matmul", "--device", "cpu", "--out", str(tmp_path / "t")]) == 2
    assert "exists and is not empty; pass --force" in _one_error_line(capsys)


def test_bandwidth(tmp_path, capsys):
    rec = _bench(tmp_path, capsys, "bandwidth", "--sizes", "1M,4M", "--iters", "3", "--no-record")
    assert [r["bytes"] for r in rec["results"]] == [2**20, 4 * 2**20]
    assert all(r["test"] == "copy" and r["gbs_max"] >= r["gbs_median"] > 0 for r in rec["results"])
    assert rec["best"]["copy_host"]["bytes"] == 4 * 2**20


@pytest.mark.slow  # 2 gloo ranks launched by torchrun
def test_allreduce_two_gloo_ranks(tmp_path, capsys):
    rec = _bench(tmp_path, capsys, "allreduce", "--nproc", "2", "--op", "all_reduce,all_gather,reduce_scatter",
                 "--sizes", "4K,64K", "--warmup", "1", "--iters", "3")
    assert rec["world_size"] == 2 and rec["backend"] == "gloo"
    rows = rec["results"]
    assert [(r["op"], r["bytes"]) for r in rows] == [
        (op, s) for op in ("all_reduce", "all_gather", "reduce_scatter") for s in (4096, 65536)]
    for r in rows:
        assert 0 < r["time_s"] <= r["time_max_s"] and r["algbw_gbs"] == pytest.approx(r["bytes"] / r["time_s"] / 1e9)
        factor = 1.0 if r["op"] == "all_reduce" else 0.5  # 2(n−1)/n and (n−1)/n at n = 2
        assert r["busbw_gbs"] == pytest.approx(r["algbw_gbs"] * factor)


@pytest.mark.slow  # 2 gloo ranks launched by torchrun
def test_allreduce_on_a_given_rendezvous_port(tmp_path, capsys):
    from trainprof.jobs.torchrun import free_port

    port = free_port("127.0.0.1")  # torchrun --rdzv-endpoint 127.0.0.1:PORT instead of --standalone
    rec = _bench(tmp_path, capsys, "allreduce", "--master-port", str(port), "--sizes", "4K",
                 "--warmup", "1", "--iters", "2")
    assert rec["world_size"] == 2 and rec["config"]["master_port"] == port and len(rec["results"]) == 1


def test_allreduce_one_rank_explains_itself(tmp_path, capsys):
    assert main(["bench", "allreduce", "--nproc", "1", "--device", "cpu", "--out", str(tmp_path / "x")]) == 2
    assert "collectives need ≥ 2 ranks" in _one_error_line(capsys)
    assert not (tmp_path / "x").exists()


def test_allreduce_busy_port_is_one_line(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        rc = main(["bench", "allreduce", "--device", "cpu", "--master-port", str(port),
                   "--out", str(tmp_path / "x")])
    assert rc == 2
    assert f"--master-port {port}: 127.0.0.1:{port} is already in use" in _one_error_line(capsys)


def test_dataloader(tmp_path, capsys):
    rec = _bench(tmp_path, capsys, "dataloader", "--workers", "0,1", "--batches", "4",
                 "--micro-batch", "2", "--seq-len", "32")
    assert [(r["num_workers"], r["pin_memory"], r["batches"]) for r in rec["results"]] == [(0, False, 4), (1, False, 4)]
    for r in rec["results"]:
        assert r["tokens_per_s"] == pytest.approx(r["batches_per_s"] * 2 * 32)
    assert rec["corpus"]["source"].startswith("python-stdlib")


def test_shapes(tmp_path, capsys):
    rec = _bench(tmp_path, capsys, "shapes", "--hidden", "192", "--vocab", "1000", "--tokens", "64",
                 "--seq-len", "32", "--ff-steps", "1", "--iters", "3")
    groups = {r["group"] for r in rec["results"]}
    assert groups == {"d_ff", "vocab", "head_dim"} and set(rec["best"]) == groups
    assert {r["value"] for r in rec["results"] if r["group"] == "d_ff"} == {448, 512, 576}  # 8/3·192 = 512


@pytest.mark.parametrize("argv, msg", [
    (["bench"], "bench: the following arguments are required: KIND"),
    (["bench", "matmul", "--sizes", "12x3"], "--sizes '12x3'"),
    (["bench", "matmul", "--dtype", "tf32", "--device", "cpu"], "tf32 is a GPU tensor-core mode"),
    (["bench", "dataloader", "--pin-memory", "on", "--device", "cpu"], "pinned memory only speeds up"),
    (["bench", "allreduce", "--device", "cpu", "--sizes", "2"], "needs ≥ 4 bytes"),
])
def test_bad_input_is_one_line(argv, msg, capsys):
    assert main(argv) == 2
    assert msg in _one_error_line(capsys)
