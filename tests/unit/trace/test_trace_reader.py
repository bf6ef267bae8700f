"""read_trace on small hand-written traces whose every number can be checked on paper.

tests/data/traces/two_steps.json (current Kineto vocabulary, µs):
  ProfilerStep#3 [1000, 1200]  ⊃ aten::linear [1005, 1125] ⊃ aten::mm [1010, 1110]
      ⊃ cudaLaunchKernel @1020 (corr 7) -> sm90_gemm_kernel on stream 7 [1030, 1080]
    aten::copy_ [1130, 1170] ⊃ cudaMemcpyAsync @1135 (corr 8) -> Memcpy HtoD [1160, 1170], 4096 B
  ProfilerStep#4 [1200, 1300] ⊃ aten::add [1210, 1240] ⊃ cudaLaunchKernel @1215 (corr 9)
      -> add_kernel [1290, 1330] (runs past the step's CPU end)
    record_param_comms [1250, 1270]: allreduce of 1024 floats in a group of 2
  plus one instant event, two metadata events, an ac2g flow pair and the profiler's own span
  (pid "Spans", tid "PyTorch Profiler").
"""

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from trainprof.trace import Kind, read_trace

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"


@pytest.fixture(scope="module")
def two() :
    return read_trace(DATA / "two_steps.json")


def _row(tr, name, nth=0):
    return int(np.flatnonzero(tr.name_id == tr.names.index(name))[nth])


def test_rows_are_complete_events_in_time_order(two):
    assert len(two) == 14
    assert two.phase_counts == {"X": 14, "s": 1, "f": 1, "i": 1, "M": 2}
    assert two.skipped_events == 0 and two.notes == ()
    assert list(two.ts_us) == sorted(two.ts_us)
    assert two.names_of(range(4)) == ["PyTorch Profiler (0)", "ProfilerStep#3", "aten::linear", "aten::mm"]


def test_kinds_from_the_current_vocabulary(two):
    kinds = {two.name(r): Kind(two.kind[r]) for r in range(len(two))}
    assert kinds["sm90_gemm_kernel"] is Kind.KERNEL
    assert kinds["Memcpy HtoD (Pinned -> Device)"] is Kind.MEMCPY
    assert kinds["cudaMemcpyAsync"] is Kind.RUNTIME
    assert kinds["aten::mm"] is Kind.CPU_OP
    assert kinds["ProfilerStep#3"] is Kind.PROFILER_STEP
    assert kinds["PyTorch Profiler (0)"] is Kind.OTHER
    assert list(two.rows(Kind.KERNEL)) == [_row(two, "sm90_gemm_kernel"), _row(two, "add_kernel")]


def test_times_and_ids_of_the_gemm_kernel(two):
    k = _row(two, "sm90_gemm_kernel")
    assert (two.ts_us[k], two.dur_us[k], two.end_us[k]) == (1030.0, 50.0, 1080.0)
    assert (two.pid[k], two.tid[k], two.stream[k], two.device[k]) == (0, 7, 7, 0)
    assert (two.correlation[k], two.external_id[k]) == (7, 11)
    launch = _row(two, "cudaLaunchKernel")
    assert (two.correlation[launch], two.stream[launch], two.device[launch]) == (7, -1, -1)


def test_string_lanes_get_negative_ids(two):
    span = _row(two, "PyTorch Profiler (0)")
    assert two.lane_labels == ("Spans", "PyTorch Profiler")
    assert (two.pid[span], two.tid[span]) == (-2, -3)


def test_metadata_allow_list(two):
    assert two.device_name == "NVIDIA H100 80GB HBM3"
    assert (two.rank, two.world_size, two.meta.backend) == (1, 2, "nccl")
    (dev,) = two.devices
    assert (dev.id, dev.num_sms, dev.compute_major, dev.compute_minor) == (0, 132, 9, 0)
    assert (dev.total_memory_bytes, dev.warp_size, dev.max_threads_per_block) == (85018279936, 32, 1024)
    assert two.time_unit == "us" and two.meta.display_time_unit == "ms"
    assert two.meta.base_time_ns == 1700000000000000000 and two.meta.schema_version == 1
    assert dict(two.meta.versions) == {"cuda_runtime_version": "12040", "nccl_version": "2.21.5"}


def test_gpu_detail_side_table(two):
    g = two.gpu
    gemm, memcpy, add = _row(two, "sm90_gemm_kernel"), _row(two, "Memcpy HtoD (Pinned -> Device)"), _row(two, "add_kernel")
    assert list(g.row) == [gemm, memcpy, add]
    i = g.index([gemm, add, memcpy, 0])
    assert list(i) == [0, 2, 1, -1]
    assert g.grid[0].tolist() == [4, 1, 1] and g.block[0].tolist() == [128, 1, 1]
    assert (g.registers_per_thread[0], g.shared_memory_bytes[0], g.occupancy_pct[0]) == (64, 1024, 25.0)
    assert g.grid[1].tolist() == [-1, -1, -1] and g.bytes[1] == 4096
    assert g.bandwidth_gbs[1] == pytest.approx(0.4096)
    assert g.registers_per_thread[2] == -1 and math.isnan(g.occupancy_pct[2])


def test_shapes_are_decoded_once_and_shared(two):
    mm, copy, add = _row(two, "aten::mm"), _row(two, "aten::copy_"), _row(two, "aten::add")
    assert two.arg(two.dims_id, mm) == ((4, 8), (8, 16))
    assert two.arg(two.types_id, mm) == ("float", "float")
    assert two.arg(two.strides_id, mm) == ((8, 1), (16, 1))
    assert two.arg(two.concrete_id, mm) == ("", "")
    assert two.dims_id[copy] == two.dims_id[add]  # identical text -> one value
    assert two.arg(two.dims_id, add) == ((4, 16), (4, 16), ())
    assert len(two.arg_values) == 6
    assert two.arg(two.dims_id, _row(two, "sm90_gemm_kernel")) is None


def test_collectives_and_flows(two):
    c = two.collectives
    assert list(c.row) == [_row(two, "record_param_comms")]
    assert (c.name, c.process_group, c.dtype) == (("allreduce",), ("0",), ("Float",))
    assert (c.in_nelems[0], c.out_nelems[0], c.group_size[0]) == (1024, 1024, 2)
    f = two.flows
    assert list(f.id) == [7, 7] and list(f.phase) == [0, 2]
    assert [two.categories[i] for i in f.cat_id] == ["ac2g", "ac2g"]
    assert list(f.ts_us) == [1020.0, 1030.0] and list(f.pid) == [100, 0]


def test_columns_are_read_only(two):
    with pytest.raises(ValueError):
        two.ts_us[0] = 0.0


def test_gzip_reads_the_same(tmp_path):
    gz = tmp_path / "two_steps.json.gz"
    gz.write_bytes(gzip.compress((DATA / "two_steps.json").read_bytes()))
    a, b = read_trace(DATA / "two_steps.json"), read_trace(gz)
    assert a.names == b.names and np.array_equal(a.ts_us, b.ts_us) and np.array_equal(a.kind, b.kind)


def test_multi_member_gzip(tmp_path):
    raw = (DATA / "two_steps.json").read_bytes()
    gz = tmp_path / "multi.json.gz"
    gz.write_bytes(gzip.compress(raw[:1000]) + gzip.compress(raw[1000:]))
    assert len(read_trace(gz)) == 14


def test_legacy_vocabulary():
    tr = read_trace(DATA / "legacy.json")
    kinds = [Kind(k).name for k in tr.kind]
    assert kinds == ["PROFILER_STEP", "CPU_OP", "RUNTIME", "KERNEL", "RUNTIME", "MEMCPY", "CPU_OP", "RUNTIME", "MEMSET"]
    conv, kernel = _row(tr, "aten::conv2d"), _row(tr, "implicit_convolve_sgemm")
    assert tr.external_id[conv] == 2 and tr.external_id[kernel] == 2  # "external id", lower case
    assert tr.arg(tr.dims_id, conv) == ((1, 3, 8, 8), (4, 3, 3, 3))  # "Input dims", lower case
    assert [tr.categories[i] for i in set(tr.flows.cat_id)] == ["async_gpu"]
    assert tr.rank == 0 and tr.world_size is None and tr.device_name is None
    assert tr.meta.schema_version is None


def test_ns_timestamps_are_detected_and_converted():
    tr = read_trace(DATA / "ns_timestamps.json")
    assert tr.time_unit == "ns" and tr.meta.display_time_unit == "ns"
    assert any("nanoseconds" in n for n in tr.notes)
    k = _row(tr, "gemm")
    assert tr.dur_us[k] == 30.0
    assert tr.ts_us[k] - tr.ts_us[0] == pytest.approx(40.0, abs=0.5)  # float64 spacing at 1.7e15 µs is 0.25
    assert tr.dur_us[0] == 100.0


def test_time_unit_override():
    tr = read_trace(DATA / "two_steps.json", time_unit="ns")
    k = _row(tr, "sm90_gemm_kernel")
    assert tr.time_unit == "ns" and tr.dur_us[k] == pytest.approx(0.05) and tr.ts_us[k] == pytest.approx(1.03)
    with pytest.raises(ValueError):
        read_trace(DATA / "two_steps.json", time_unit="ms")


def test_malformed_events_are_skipped_and_counted():
    tr = read_trace(DATA / "edge_cases.json")
    assert tr.skip_reasons == {
        "X event without a finite ts/dur": 2,
        "X event with negative dur": 1,
        "undecodable event (not an object, or a core field of the wrong type)": 1,
    }
    assert tr.skipped_events == 4
    assert len(tr) == 11
    assert "no_dur" not in tr.names_of(range(len(tr))) and "negative" not in tr.names_of(range(len(tr)))
    assert any("unreadable args" in n for n in tr.notes)
    assert any("unexpected types" in n for n in tr.notes)


def test_format_variations_are_tolerated():
    tr = read_trace(DATA / "edge_cases.json")
    ok = _row(tr, "aten::ok")
    assert (tr.pid[ok], tr.ts_us[ok]) == (100, 10.5)  # "100" and "10.5" as strings
    assert tr.stream[_row(tr, "hipMemcpyWithStream")] == 3  # ROCm writes "0x3"
    assert tr.stream[_row(tr, "stream_from_tid")] == 9  # no args.stream: the GPU lane's tid
    assert tr.device[_row(tr, "stream_from_tid")] == 0  # no args.device: the GPU lane's pid
    assert tr.kind[_row(tr, "custom")] == Kind.OTHER
    odd = _row(tr, "odd_corr")  # "correlation": "abc" costs that value only
    assert tr.correlation[odd] == -1 and tr.stream[odd] == 7
    assert tr.python_parent_id[_row(tr, "train.py(10): main")] == -1  # null
    assert 42 in set(tr.flows.id)  # flow id "0x2a"
    assert tr.phase_counts["C"] == 1


def test_json_array_format(tmp_path):
    p = tmp_path / "array.json"
    p.write_text('[{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]')
    tr = read_trace(p)
    assert len(tr) == 1 and tr.dur_us[0] == 2.0 and tr.device_name is None


def test_empty_event_list_is_a_trace_with_a_note(tmp_path):
    p = tmp_path / "empty_events.json"
    p.write_text('{"traceEvents": []}')
    tr = read_trace(p)
    assert len(tr) == 0 and any("no complete" in n for n in tr.notes)
