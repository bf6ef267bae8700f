"""Call sites name the user's line: the innermost Python frame outside builtins, torch and
the standard library."""

import json
from pathlib import Path

import pytest

from trainprof.analysis.timeline.callsite import frame_label, is_user_frame
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.idle import idle_breakdown
from trainprof.trace import read_trace

from tests.plain import plain

REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"


@pytest.mark.parametrize("name, user", [
    ("<built-in method to of Tensor object at 0x7ce2a1b3c4d0>", False),
    ("<built-in function _cuda_synchronize>", False),
    ("<frozen importlib._bootstrap>(1176): _find_and_load", False),
    ("torch/nn/modules/module.py(1743): _call_impl", False),
    ("/usr/lib/python3.10/site-packages/torch/cuda/__init__.py(954): synchronize", False),
    ("weakref.py(414): __getitem__", False),  # standard library
    ("contextlib.py(81): inner", False),
    ("nn.Module: Linear_0", False),
    ("transformers/pipelines/base.py(1173): _ensure_tensor_on_device", True),
    ("/home/me/proj/site-packages/transformers/models/owlv2/modeling_owlv2.py(1421): box_predictor", True),
    ("train.py(88): main", True),
])
def test_user_frames(name, user):
    assert is_user_frame(name) is user


def test_frame_label_drops_the_colon_and_the_site_packages_prefix():
    assert frame_label("transformers/pipelines/base.py(1173): _ensure_tensor_on_device") == \
        "transformers/pipelines/base.py(1173) _ensure_tensor_on_device"
    assert frame_label("/x/site-packages/m/a.py(3): f") == "m/a.py(3) f"


def test_host_sync_call_site_skips_builtin_and_torch_frames(tmp_path):
    # user frame ⊃ torch frame ⊃ <built-in method to> ⊃ aten::to ... cudaStreamSynchronize;
    # the GPU idles from 300 (end of kernel 1) to 620 (kernel 2, launched at 600 after the sync)
    ev = [{"ph": "X", "cat": "python_function", "name": "pipelines/base.py(1173): _ensure_tensor_on_device",
           "pid": 1, "tid": 1, "ts": 100, "dur": 500},
          {"ph": "X", "cat": "python_function", "name": "torch/utils/_contextlib.py(116): decorate_context",
           "pid": 1, "tid": 1, "ts": 110, "dur": 480},
          {"ph": "X", "cat": "python_function", "name": "<built-in method to of Tensor object at 0x7ce2a1b3c4d0>",
           "pid": 1, "tid": 1, "ts": 120, "dur": 460},
          {"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 1, "tid": 1, "ts": 130, "dur": 440},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 140, "dur": 5,
           "args": {"correlation": 1}},
          {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 150, "dur": 150,
           "args": {"correlation": 1, "stream": 7, "device": 0}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 150, "dur": 160,
           "args": {"correlation": 2}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 600, "dur": 5,
           "args": {"correlation": 3}},
          {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 620, "dur": 100,
           "args": {"correlation": 3, "stream": 7, "device": 0}}]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA V100"}],
                             "traceEvents": ev}))
    ib = plain(idle_breakdown(Context.build(read_trace(p))))
    assert ib["host_sync_us"] == 320.0  # 620 − 300
    (site,) = ib["call_sites"]
    assert site["python"] == "pipelines/base.py(1173) _ensure_tensor_on_device"
    assert site["call"] == "cudaStreamSynchronize" and site["op"] == "aten::to"


def test_real_h100_trace_names_the_user_line_not_a_builtin():
    # the biggest sync gap of this trace sits under <built-in function _cuda_synchronize>
    trace = read_trace(REAL / "tracelens_h100_hf_inference" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    sites = plain(idle_breakdown(Context.build(trace)))["call_sites"]
    assert sites[0]["python"] == "moca/library/profiling/profile.py(34) run_torch_profiler"
    assert all(s["python"] and not s["python"].startswith("<") for s in sites)
