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

from trainprof import namematch
from trainprof.namematch import NamePattern, not_followed_by
from trainprof.trace.ids import distinct
from trainprof.trace.kinds import Kind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

OTHER = "other"

# fooBar -> foo Bar, FOOBar -> FOO Bar, 6Kernel -> 6 Kernel (mangled C++ names glue a length
# to the next identifier: "train6KernelINS")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[0-9])(?=[A-Z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _unmangle_prefix(name: str) -> str:
    """`_ZN5aiter24add_rmsnorm_quant_kernelI...` -> `aiter::add_rmsnorm_quant_kernel I...`: the
    Itanium nested name's <length><identifier> parts, so a length does not glue onto a word
    ("24add"); the mangled template arguments after it are left as they are."""
    if not name.startswith("_ZN"):
        return name
    i, parts = 3, []
    while i < len(name) and name[i].isdigit():
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        n = int(name[i:j])
        if n == 0 or j + n > len(name):
            break
        parts.append(name[j: j + n])
        i = j + n
    return "::".join(parts) + " " + name[i:] if parts else name


def tokens(name: str, memo: dict[str, str] | None = None) -> str:
    """The token string a kernel name is matched as: 'ncclDevKernel_AllReduce' -> 'nccl dev kernel all reduce'.

    Every camelCase boundary lies inside a run of letters and digits, so each run is split
    on its own; `memo` (run -> its split) shares that work across the names of one trace,
    whose C++ signatures repeat the same runs (GenericPackedTensorAccessor, RestrictPtrTraits;
    measured: docs/benchmarks.md, "Timings in docstrings")."""
    memo = {} if memo is None else memo
    parts = []
    for run in _NON_ALNUM.split(_unmangle_prefix(name)):
        if run:
            split = memo.get(run)
            if split is None:
                split = memo[run] = " ".join(_CAMEL.sub(" ", run).lower().split())
            parts.append(split)
    return " ".join(parts)


@dataclass(frozen=True)
class Rule:
    cls: str
    why: str
    patterns: tuple[NamePattern, ...]  # one alternation of the rule's `match` list (_compile)

    def search(self, padded: str) -> bool:
        return any(p.search(padded) for p in self.patterns)


@dataclass(frozen=True)
class KernelClasses:
    names: tuple[str, ...]  # class names in display order (without "other")
    rules: tuple[Rule, ...]  # in precedence order
    tensor_core: tuple[NamePattern, ...]
    tensor_core_unless: tuple[NamePattern, ...]
    tensor_core_classes: frozenset[str]

    def rule(self, kernel_name: str, tok: str | None = None) -> Rule | None:
        """The first rule that matches, or None ("other"). `tok`: tokens(kernel_name), if known."""
        padded = _padded(tokens(kernel_name) if tok is None else tok)
        for r in self.rules:
            if r.search(padded):
                return r
        return None

    def classify(self, kernel_name: str, tok: str | None = None) -> str:
        r = self.rule(kernel_name, tok)
        return r.cls if r else OTHER

    def is_tensor_core(self, kernel_name: str, cls: str | None = None, tok: str | None = None) -> bool:
        """Whether the name says the kernel runs MMA on Tensor/Matrix Cores (only for
        GEMM/convolution/attention kernels)."""
        tok = tokens(kernel_name) if tok is None else tok
        if (cls or self.classify(kernel_name, tok)) not in self.tensor_core_classes:
            return False
        padded = _padded(tok)
        if any(p.search(padded) for p in self.tensor_core_unless):
            return False
        return any(p.search(padded) for p in self.tensor_core)


def _padded(tok: str) -> bytes:
    """" " + the token string, as bytes: tokens are ASCII letters, digits and spaces, and RE2
    reads bytes without the UTF-8 round trip it makes for a str (1.5 vs 3 µs a call)."""
    return (" " + tok).encode("ascii")


_LOOKAHEAD = re.compile(r"(.*)\(\?!([A-Za-z0-9 ]+)\)")


def _compile(patterns: list[str]) -> tuple[NamePattern, ...]:
    """A rule's patterns as one RE2 alternation searched in " " + token string (linear time
    whatever the name: namematch.py). A leading `\\b` is written as that literal space
    (the start of a token: same meaning), `^` as "^ ". A trailing `(?!word)`, which RE2 lacks,
    becomes the equivalent alternation (namematch.not_followed_by). One RE2 call per rule
    instead of one `re` call per pattern: the corpus classifies in about the same time
    (benchmarks/kernel_classes.py)."""
    out = []
    for p in patterns:
        if p.startswith("\\b"):
            p = " " + p[2:]
        elif p.startswith("^"):
            p = "^ " + p[1:]
        if m := _LOOKAHEAD.fullmatch(p):
            p = m.group(1) + not_followed_by(m.group(2))
        out.append(p)
    return (namematch.compile("|".join(f"(?:{p})" for p in out)),) if out else ()


def parse_classes(text: str) -> KernelClasses:
    data = tomllib.loads(text)
    names = tuple(data["classes"])
    rules = []
    for i, r in enumerate(data["rule"]):
        if r["class"] not in names:
            raise ValueError(f"kernel_classes rule {i + 1}: class {r['class']!r} is not in `classes`")
        rules.append(Rule(r["class"], r.get("why", ""), _compile(r["match"])))
    tc = data["tensor_core"]
    return KernelClasses(
        names=names, rules=tuple(rules),
        tensor_core=_compile(tc["match"]),
        tensor_core_unless=_compile(tc.get("unless", [])),
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
    memo: dict[str, str] = {}
    toks = [tokens(n, memo) for n in names]
    cls = [kc.classify(n, tk) for n, tk in zip(names, toks)]
    return cls, [kc.is_tensor_core(n, c, tk) for n, c, tk in zip(names, cls, toks)]


def classify_rows(names: tuple[str, ...], name_id: np.ndarray, kind: np.ndarray,
                  classes: KernelClasses | None = None) -> RowClasses:
    """Class of every GPU activity row. Memcpy/memset rows are classed by kind, whatever
    their name, and kernels by name (each distinct name classified once)."""
    kc = classes or load_classes()
    all_names = kc.names + (OTHER,)
    index = {n: i for i, n in enumerate(all_names)}
    k = kind == Kind.KERNEL
    # only names that label a kernel row: a trace's CPU-op and Python-frame names outnumber
    # its kernel names (620 names, 172 of them kernels, on the MI300 ResNet trace)
    kernel_ids = distinct(name_id[k], len(names))
    cls_names, tc_flags = classify_names(tuple(names[i] for i in kernel_ids), kc)
    by_name = np.full(len(names), index[OTHER], dtype=np.int8)
    tc_by_name = np.zeros(len(names), dtype=bool)
    by_name[kernel_ids] = [index[c] for c in cls_names]
    tc_by_name[kernel_ids] = tc_flags
    cls = np.full(len(kind), -1, dtype=np.int8)
    tc = np.zeros(len(kind), dtype=bool)
    cls[k] = by_name[name_id[k]]
    tc[k] = tc_by_name[name_id[k]]
    cls[kind == Kind.MEMCPY] = index["memcpy"]
    cls[kind == Kind.MEMSET] = index["memset"]
    return RowClasses(all_names, cls, tc)
