"""Event kinds: the category vocabulary of current and legacy Kineto mapped to one small enum.

Kineto names its activity types in libkineto/src/ActivityType.cpp ("kernel", "gpu_memcpy",
"cuda_runtime", "cpu_op", ...). Traces written by PyTorch <= 1.9 used capitalised names
("Kernel", "Memcpy", "Runtime", "Operator"); torch-tb-profiler's `EventTypeMap`
(tb_plugin/torch_tb_profiler/profiler/trace.py) lower-cases the category and accepts both,
and so do we. ROCm traces use the same categories (the runtime calls are hip*, the GPU
lanes are the same "kernel"/"gpu_memcpy" events), checked on the MI250 and MI300 traces.

A category nobody listed maps to OTHER and is kept: losing rows silently is worse than an
unclassified one.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class Kind(IntEnum):
    KERNEL = 0
    MEMCPY = 1
    MEMSET = 2
    RUNTIME = 3  # host-side CUDA/HIP runtime API calls (cudaLaunchKernel, hipMemcpyAsync, ...)
    DRIVER = 4  # host-side driver API calls (cuLaunchKernel: Triton launches this way)
    CPU_OP = 5  # aten ops and other RecordFunction scopes of the op kind
    USER_ANNOTATION = 6  # record_function(...) ranges on the CPU
    GPU_USER_ANNOTATION = 7  # the same ranges projected onto a GPU stream
    PYTHON_FUNCTION = 8  # with_stack=True Python frames
    PROFILER_STEP = 9  # "ProfilerStep#N", one per profiler.step()
    GPU_SYNC = 10  # "cuda_sync": Kineto's stream/event-wait markers (PyTorch >= 2.3)
    OTHER = 11


# Lower-cased category -> kind. Sources: Kineto ActivityType.cpp (current names) and
# torch-tb-profiler's EventTypeMap (legacy names and the other runtimes).
CATEGORY_KIND: dict[str, Kind] = {
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "cuda_runtime": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "hip_runtime": Kind.RUNTIME,
    "xpu_runtime": Kind.RUNTIME,
    "mtia_runtime": Kind.RUNTIME,
    "privateuse1_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "hip_driver": Kind.DRIVER,
    "privateuse1_driver": Kind.DRIVER,
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "gpu_user_annotation": Kind.GPU_USER_ANNOTATION,
    "python_function": Kind.PYTHON_FUNCTION,
    "python": Kind.PYTHON_FUNCTION,
    "cuda_sync": Kind.GPU_SYNC,
}

# Kinds drawn on a GPU lane (pid = device, tid = stream). Their `stream` column comes from
# args.stream, or from tid when a trace leaves it out.
GPU_KINDS = frozenset({Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION, Kind.GPU_SYNC})
# GPU work that occupies the device: what a launch produces and what busy time is made of.
GPU_WORK_KINDS = frozenset({Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET})
LAUNCH_KINDS = frozenset({Kind.RUNTIME, Kind.DRIVER})

STEP_PREFIX = "ProfilerStep#"


def category_kinds(categories) -> np.ndarray:
    """Kind per category id (int8), for `kind = table[cat_id]`; a missing category is OTHER."""
    return np.array([CATEGORY_KIND.get((c or "").lower(), Kind.OTHER) for c in categories], dtype=np.int8)


def kinds_for(cat_id: np.ndarray, name_id: np.ndarray, categories: list[str], names: list[str]) -> np.ndarray:
    """Kind per row. ProfilerStep#N is recognised by name: current Kineto files it under
    user_annotation, PyTorch 1.x under cpu_op/Operator; the GPU projection of a step
    (gpu_user_annotation "ProfilerStep#N", seen on MI250/H100 traces) stays GPU_USER_ANNOTATION.
    """
    kind = category_kinds(categories)[cat_id]
    is_step_name = np.array([n.startswith(STEP_PREFIX) for n in names], dtype=bool)
    if is_step_name.any():
        cpu_side = (kind == Kind.USER_ANNOTATION) | (kind == Kind.CPU_OP) | (kind == Kind.OTHER)
        kind[is_step_name[name_id] & cpu_side] = Kind.PROFILER_STEP
    return kind


def kind_mask(kind: np.ndarray, kinds) -> np.ndarray:
    """Boolean mask of rows whose kind is in `kinds` (an iterable of Kind)."""
    return np.isin(kind, np.fromiter((int(k) for k in kinds), dtype=np.int8))

# The name of a per-module range: torch's with_modules frames (python_function, e.g.
# "nn.Module: Block_0") and trainprof's own record_function ranges (collect/module_scopes.py)
# spell it alike, so one reader serves both.
MODULE_PREFIX = "nn.Module: "
