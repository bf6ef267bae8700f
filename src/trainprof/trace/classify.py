"""Kernel classes and Tensor Core use from kernel names, driven by kernel_classes.toml.

Classification runs once per *distinct* name (a 200k-event trace has a few hundred), then
maps to rows through `name_id`, so its cost does not grow with the trace.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from trainprof.trace.kinds import Kind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

OTHER = "other"


@dataclass(frozen=True)
class KernelClasses:
    names: tuple[str, ...]  # class names in match order, then "other"
    patterns: tuple[re.Pattern[str], ...]  # one combined regex per class
    tensor_core: re.Pattern[str]

    def classify(self, kernel_name: str) -> str:
        for cls, pat in zip(self.names, self.patterns):
            if pat.search(kernel_name):
                return cls
        return OTHER

    def is_tensor_core(self, kernel_name: str) -> bool:
        return bool(self.tensor_core.search(kernel_name))


def _combine(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" if not p.startswith("(?i)") else f"(?i:{p[4:]})" for p in patterns))


def parse_classes(text: str) -> KernelClasses:
    data = tomllib.loads(text)
    names = tuple(c["name"] for c in data["class"])
    return KernelClasses(
        names=names,
        patterns=tuple(_combine(c["patterns"]) for c in data["class"]),
        tensor_core=_combine(data["tensor_core"]["patterns"]),
    )


@lru_cache(maxsize=1)
def load_classes() -> KernelClasses:
    text = resources.files("trainprof.trace").joinpath("kernel_classes.toml").read_text("utf-8")
    return parse_classes(text)


@dataclass(frozen=True, eq=False)
class RowClasses:
    """Per-row class ids (index into `names`, -1 for rows that are not GPU activity)."""

    names: tuple[str, ...]
    class_id: np.ndarray  # int8
    tensor_core: np.ndarray  # bool


def classify_rows(names: tuple[str, ...], name_id: np.ndarray, kind: np.ndarray,
                  classes: KernelClasses | None = None) -> RowClasses:
    """Class of every GPU activity row. Memcpy/memset rows are classed by kind, whatever
    their name, and kernels by name."""
    kc = classes or load_classes()
    all_names = kc.names + (OTHER,)
    index = {n: i for i, n in enumerate(all_names)}
    by_name = np.array([index[kc.classify(n)] for n in names], dtype=np.int8) if names else np.zeros(0, np.int8)
    tc_by_name = np.array([kc.is_tensor_core(n) for n in names], dtype=bool) if names else np.zeros(0, bool)
    cls = np.full(len(kind), -1, dtype=np.int8)
    tc = np.zeros(len(kind), dtype=bool)
    k = kind == Kind.KERNEL
    cls[k] = by_name[name_id[k]]
    tc[k] = tc_by_name[name_id[k]]
    cls[kind == Kind.MEMCPY] = index["memcpy"]
    cls[kind == Kind.MEMSET] = index["memset"]
    return RowClasses(all_names, cls, tc)
