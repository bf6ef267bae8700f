"""Kernel classes and Tensor Core use from kernel names, driven by kernel_classes.toml.

A name is matched as a *token string* (see the TOML header): split at non-alphanumerics and
camelCase boundaries, lower-cased, space-joined, so a pattern's `\\b` is a token boundary and
`\\bconv\\b` cannot match inside "convert". Rules are ordered; the first match wins.

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

# fooBar -> foo Bar, FOOBar -> FOO Bar, 6Kernel -> 6 Kernel (mangled C++ names glue a length
# to the next identifier: "train6KernelINS")
_CAMEL = (re.compile(r"(?<=[a-z])(?=[A-Z])"), re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])"),
          re.compile(r"(?<=[0-9])(?=[A-Z])"))
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def tokens(name: str) -> str:
    """The token string a kernel name is matched as: 'ncclDevKernel_AllReduce' -> 'nccl dev kernel all reduce'."""
    for pat in _CAMEL:
        name = pat.sub(" ", name)
    return " ".join(_NON_ALNUM.sub(" ", name).lower().split())


@dataclass(frozen=True)
class Rule:
    cls: str
    why: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class KernelClasses:
    names: tuple[str, ...]  # class names in display order (without "other")
    rules: tuple[Rule, ...]  # in precedence order
    tensor_core: re.Pattern[str]
    tensor_core_unless: re.Pattern[str] | None
    tensor_core_classes: frozenset[str]

    def rule(self, kernel_name: str) -> Rule | None:
        """The first rule that matches, or None ("other")."""
        tok = tokens(kernel_name)
        for r in self.rules:
            if r.pattern.search(tok):
                return r
        return None

    def classify(self, kernel_name: str) -> str:
        r = self.rule(kernel_name)
        return r.cls if r else OTHER

    def is_tensor_core(self, kernel_name: str, cls: str | None = None) -> bool:
        """Whether the name says the kernel runs MMA on Tensor/Matrix Cores (only for
        GEMM/convolution/attention kernels)."""
        if (cls or self.classify(kernel_name)) not in self.tensor_core_classes:
            return False
        tok = tokens(kernel_name)
        if self.tensor_core_unless is not None and self.tensor_core_unless.search(tok):
            return False
        return bool(self.tensor_core.search(tok))


def _combine(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


def parse_classes(text: str) -> KernelClasses:
    data = tomllib.loads(text)
    names = tuple(data["classes"])
    rules = []
    for i, r in enumerate(data["rule"]):
        if r["class"] not in names:
            raise ValueError(f"kernel_classes rule {i + 1}: class {r['class']!r} is not in `classes`")
        rules.append(Rule(r["class"], r.get("why", ""), _combine(r["match"])))
    tc = data["tensor_core"]
    return KernelClasses(
        names=names, rules=tuple(rules),
        tensor_core=_combine(tc["match"]),
        tensor_core_unless=_combine(tc["unless"]) if tc.get("unless") else None,
        tensor_core_classes=frozenset(tc["classes"]),
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


def classify_names(names: tuple[str, ...], classes: KernelClasses | None = None) -> tuple[list[str], list[bool]]:
    """Class and Tensor Core flag of each distinct name."""
    kc = classes or load_classes()
    cls = [kc.classify(n) for n in names]
    return cls, [kc.is_tensor_core(n, c) for n, c in zip(names, cls)]


def classify_rows(names: tuple[str, ...], name_id: np.ndarray, kind: np.ndarray,
                  classes: KernelClasses | None = None) -> RowClasses:
    """Class of every GPU activity row. Memcpy/memset rows are classed by kind, whatever
    their name, and kernels by name (each distinct name classified once)."""
    kc = classes or load_classes()
    all_names = kc.names + (OTHER,)
    index = {n: i for i, n in enumerate(all_names)}
    cls_names, tc_flags = classify_names(names, kc)
    by_name = np.array([index[c] for c in cls_names], dtype=np.int8) if names else np.zeros(0, np.int8)
    tc_by_name = np.array(tc_flags, dtype=bool) if names else np.zeros(0, bool)
    cls = np.full(len(kind), -1, dtype=np.int8)
    tc = np.zeros(len(kind), dtype=bool)
    k = kind == Kind.KERNEL
    cls[k] = by_name[name_id[k]]
    tc[k] = tc_by_name[name_id[k]]
    cls[kind == Kind.MEMCPY] = index["memcpy"]
    cls[kind == Kind.MEMSET] = index["memset"]
    return RowClasses(all_names, cls, tc)
