"""Every real trace in tests/data/traces/real reads, links and splits into steps; known facts hold.

The facts were checked by hand against the raw JSON (json.load + counting) and against
tests/data/traces/real/SOURCES.md. The traces ship with the repository (MIT-licensed, see SOURCES.md).
"""

from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from trainprof.trace import Kind, find_steps, link, read_trace

REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"
FILES = sorted(p.relative_to(REAL).as_posix() for p in REAL.rglob("*")
               if p.is_file() and p.name.endswith((".json", ".json.gz")))


@lru_cache(maxsize=None)
def _load(rel: str):
    tr = read_trace(REAL / rel)
    ln = link(tr)
    return tr, ln, find_steps(tr, ln)


def _names(tr, kind):
    return Counter(tr.names_of(tr.rows(kind)))


def test_shipped_folder_has_traces():
    assert len(FILES) >= 20


@pytest.mark.parametrize("rel", FILES)
def test_every_trace_reads_cleanly(rel):
    tr, ln, steps = _load(rel)
    assert len(tr) > 0 and sum(tr.phase_counts.values()) > 0
    assert tr.skipped_events == 0 and tr.notes == ()
    assert np.all(np.diff(tr.ts_us) >= 0) and np.all(tr.end_us >= tr.ts_us)
    assert tr.time_unit == "us"
    assert len(steps) >= 1
    if len(tr.rows(Kind.KERNEL)):
        assert ln.n_linked > 0
        assert np.all(steps.n_gpu_events[steps.n_gpu_events > 0] > 0)


def test_hostsync_trace_has_its_syncs():
    tr, ln, steps = _load("hta_16rank_nccl_a100_hostsync/rank0.json.gz")
    ops = _names(tr, Kind.CPU_OP)
    assert ops["aten::item"] == 945 and ops["aten::_local_scalar_dense"] == 945
    assert _names(tr, Kind.RUNTIME)["cudaStreamSynchronize"] == 75
    assert tr.device_name == "NVIDIA A100-SXM4-80GB" and (tr.rank, tr.world_size) == (0, 16)
    assert list(steps.number) == [550, 551, 552, 553, 554]
    assert set(steps.n_gpu_events) == {1375}  # identical steps launch identical work


def test_largest_trace_counts_and_links():
    tr, ln, steps = _load("hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz")
    assert sum(tr.phase_counts.values()) == 216092
    assert tr.phase_counts == {"X": 123379, "i": 28012, "f": 42373, "s": 22290, "M": 38}
    kernels = _names(tr, Kind.KERNEL)
    assert sum(kernels.values()) == 19370
    assert kernels["ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"] == 2020
    streams = Counter(tr.stream[tr.rows(Kind.KERNEL)].tolist())
    assert streams == {7: 17350, 14: 2020}  # compute stream, NCCL stream
    assert ln.linked_fraction == 1.0 and (ln.op[tr.rows(Kind.KERNEL)] >= 0).all()
    assert tr.device_name == "Tesla V100-SXM2-32GB" and (tr.rank, tr.world_size) == (1, 2)
    assert list(steps.number) == [2, 3, 4, 5, 6] and set(steps.n_gpu_events) == {4458}
    # In 2022-era Kineto the runtime call's "External id" is its correlation, not the op's,
    # which is why ops are found by time containment.
    calls = tr.rows(Kind.RUNTIME)
    assert np.array_equal(tr.external_id[calls], tr.correlation[calls])


@pytest.mark.parametrize("rel", [
    "hta_ddp_2rank_nccl_a100/nccl_data.json.gz",
    "hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz",
    "hta_resnet_v100_ns_timeunit/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta_trace_diff_a100_vs_v100/control/control.json.gz",
    "param_resnet_rtx2080ti_dataloader/resnet_kineto.json.gz",
])
def test_cuda_training_traces_link_at_least_95_percent(rel):
    tr, ln, _ = _load(rel)
    kernels = tr.rows(Kind.KERNEL)
    assert (ln.launch[kernels] >= 0).mean() >= 0.95
    assert (ln.op[kernels] >= 0).mean() >= 0.95


def test_kernels_before_the_window_are_unlinked():
    # The HF inference traces start mid-flight: GPU work whose launch predates the window.
    tr, ln, _ = _load("tracelens_h100_hf_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    act = tr.rows(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
    unlinked = act[ln.launch[act] < 0]
    assert (ln.n_activities, ln.n_linked) == (1707, 1198)
    assert tr.ts_us[unlinked].min() < tr.ts_us[tr.rows(Kind.RUNTIME)].min()


def test_ns_resolution_trace_is_microseconds():
    tr, _, steps = _load("hta_resnet_v100_ns_timeunit/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
    assert tr.meta.display_time_unit == "ns" and tr.time_unit == "us"
    assert list(steps.number) == [101, 102, 103, 104, 105]
    # Durations straight from the file (ProfilerStep#101 dur 35115.869 ...): µs, not ns.
    assert tr.dur_us[steps.row].tolist() == pytest.approx([35115.869, 72077.474, 95697.341, 95551.087, 95699.037])
    assert len(tr.collectives) == 45


def test_amd_traces():
    tr, ln, _ = _load("tracelens_mi300_hf_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    assert "MI300" in tr.device_name
    launches = Counter(tr.names_of(ln.launch[tr.rows(Kind.KERNEL)][ln.launch[tr.rows(Kind.KERNEL)] >= 0]))
    assert launches == {"hipLaunchKernel": 860, "hipExtModuleLaunchKernel": 169, "hipModuleLaunchKernel": 24}
    assert sum(n.startswith("Cijk_") for n in tr.names_of(tr.rows(Kind.KERNEL))) == 243  # Tensile GEMMs
    tr, ln, steps = _load("tracelens_mi300_resnet_ddp_8rank_rank0/resnet_act_checkpoint.json.gz")
    assert tr.device_name == "AMD Instinct MI300X" and (tr.rank, tr.world_size) == (0, 8)
    assert set(tr.device[tr.rows(Kind.KERNEL)].tolist()) == {2}  # this rank's GPU is device 2
    assert tr.devices[2].warp_size == 64 and tr.devices[2].num_sms == 304
    tr, ln, _ = _load("hta_small_edge_cases/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert tr.stream[tr.rows(Kind.RUNTIME)].max() == 0  # "stream": "0x0" parsed
    assert ln.linked_fraction == 1.0


def test_legacy_and_driver_launches():
    tr, ln, _ = _load("hta_small_edge_cases/inference_rank_1.json.gz")
    assert tr.categories[:2] == ("Kernel", "Runtime") and len(tr.rows(Kind.KERNEL)) == 4
    assert ln.n_linked == 4
    tr, ln, _ = _load("hta_small_edge_cases/triton_example.json.gz")
    (k,) = tr.rows(Kind.KERNEL)
    assert tr.name(ln.launch[k]) == "cuLaunchKernel" and tr.kind[ln.launch[k]] == Kind.DRIVER
    assert tr.name(ln.op[k]) == tr.name(k) == "triton_poi_fused_add_cos_sin_0"


def test_cpu_only_trace():
    tr, ln, steps = _load("hta_small_edge_cases/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    assert not len(tr.rows(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.RUNTIME))
    assert tr.device_name is None and (tr.rank, tr.world_size, tr.meta.backend) == (34, 300, "gloo")
    assert list(steps.number) == [551] and np.isnan(steps.gpu_start_us[0])


def test_traces_without_steps_or_iterations_get_a_pseudo_step():
    # one "## Call CompiledFxGraph … ##" range, nothing repeats; the tiny legacy trace has no annotation
    for rel in ("tracelens_mi300_torch_compile_triton/trace.json.gz", "hta_small_edge_cases/inference_rank_1.json.gz"):
        tr, ln, steps = _load(rel)
        assert steps.pseudo and steps.n_gpu_events[0] == len(tr.rows(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET))
    tr, _, _ = _load("param_resnet_rtx2080ti_dataloader/resnet_kineto.json.gz")
    assert _names(tr, Kind.USER_ANNOTATION)["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"] == 30


def test_metadata_only_from_the_allow_list():
    tr, _, _ = _load("hta_recsys_128rank_nccl_a100/sampled_rank-0.json.gz")
    assert tr.devices == () and tr.device_name is None  # no deviceProperties in this file
    assert (tr.rank, tr.world_size) == (0, 128)
    tr, _, _ = _load("tracelens_h100_hf_inference/gaunernst_bert-small-uncased__1016001.json.gz")
    assert tr.device_name == "NVIDIA H100 80GB HBM3"
    assert dict(tr.meta.versions) == {"cupti_version": "22", "cuda_runtime_version": "12040",
                                      "cuda_driver_version": "12090"}
    # The file's metadata.system.env block (HF_TOKEN, redacted) is never read.
    assert "REDACTED" not in repr(tr) and not any("REDACTED" in n for n in tr.names)


def test_the_dataloader_trace_has_30_steps_from_its_loader():
    # 30 `enumerate(DataLoader)#…__next__` ranges, one per turn of the loop, no ProfilerStep: 30
    # steps, each from one __next__ to the next. Every step after the first launches the same 335
    # GPU activities (the first also runs cuDNN's first-call setup): one iteration each.
    tr, _, s = _load("param_resnet_rtx2080ti_dataloader/resnet_kineto.json.gz")
    assert (s.source, s.anchor, len(s)) == ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                                            "opens", 30)
    assert s.n_gpu_events.tolist() == [397] + [335] * 29
    assert (s.cpu_start_us == tr.ts_us[s.row]).all()  # each step opens at its __next__


def test_optimizer_step_annotations_make_the_steps_of_hta_step_based_trace():
    # 5 Optimizer.step#SGD.step ranges close 5 iterations of x.to(), zero_grad, forward, backward, step;
    # the last step's optimizer kernels fall after the trace's end (its Optimizer.step lasts 0 µs)
    tr, _, s = _load("hta_small_edge_cases/step_based_trace_2543932.json.gz")
    assert (s.source, s.anchor, len(s)) == ("Optimizer.step#SGD.step", "closes", 5)
    assert s.n_gpu_events.tolist() == [28, 28, 28, 28, 24]
    assert (s.cpu_end_us == tr.end_us[s.row]).all()
