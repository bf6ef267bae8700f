"""Load the dense-peak table and match real device-name strings to exactly one row.

Matching is deliberately strict: a name that matches no row, or more than one, is
"unknown" and gets no MFU. A wrong peak is worse than none (nanoGPT's hard-coded A100
peak makes its H100 MFU ~3x too high).
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources

from trainprof import namematch

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class DeviceSpec:
    key: str
    name: str
    vendor: str
    patterns: tuple[re.Pattern[str], ...]
    tflops: dict[str, float]
    bandwidth_gbs: float | None
    memory_gb: float | None
    source: str
    notes: str = ""
    mig_slices: int | None = None  # compute slices MIG can split the GPU into (None: no MIG)
    arch: str | None = None  # "sm_90", "gfx942": the key of its ArchInfo


    def matches(self, device_name: str) -> bool:
        return any(p.search(device_name) for p in self.patterns)

    def peak_tflops(self, dtype: str) -> float | None:
        return self.tflops.get(dtype)


@dataclass(frozen=True)
class ArchInfo:
    """What an architecture tells about a GPU the trace does not name (specs.toml [[arch]])."""

    arch: str  # "sm_75", "gfx942"
    vendor: str  # "nvidia" | "amd"
    family: str  # "Turing", "CDNA3"
    tensor_cores: bool = False  # MMA units for 16-bit matmuls (Tensor Cores / Matrix Cores)
    bf16: bool = False  # a bf16 matrix path worth advising (NVIDIA CC >= 8.0, AMD CDNA2+)
    tf32: bool = False  # TF32 matmuls behind torch.backends.cuda.matmul.allow_tf32
    products: str = ""
    assume: str | None = None  # the one spec row this architecture can be, if any
    why: str = ""  # why `assume` is safe


@dataclass(frozen=True)
class SpecTable:
    devices: tuple[DeviceSpec, ...]
    by_key: dict[str, DeviceSpec] = field(default_factory=dict)
    archs: dict[str, ArchInfo] = field(default_factory=dict)

    def rows_of(self, arch: str) -> list[str]:
        """The keys of the rows of one architecture (the --gpu-spec candidates for it)."""
        return [d.key for d in self.devices if d.arch == arch]

    def match(self, device_name: str) -> DeviceSpec | None:
        """The one row whose patterns match `device_name`, else None (unknown or ambiguous).
        A MIG slice ("NVIDIA A100-SXM4-40GB MIG 1g.5gb") gets its parent row scaled (mig_spec)."""
        m = MIG.search(device_name)
        if m:
            parent = self.match(device_name[: m.start()])
            return mig_spec(parent, int(m["g"]), float(m["mem"])) if parent is not None else None
        hits = [d for d in self.devices if d.matches(device_name)]
        return hits[0] if len(hits) == 1 else None

    def candidates(self, device_name: str) -> list[str]:
        m = MIG.search(device_name)
        name = device_name[: m.start()] if m else device_name
        return [d.key for d in self.devices if d.matches(name)]

    def get(self, key: str) -> DeviceSpec | None:
        """A row by key; "<key>/mig-<g>g.<mem>gb" for a MIG slice of it."""
        key = key.lower()
        m = re.fullmatch(r"(?P<parent>.+)/mig-(?P<g>\d+)g\.(?P<mem>\d+)gb", key)
        if m:
            parent = self.by_key.get(m["parent"])
            return mig_spec(parent, int(m["g"]), float(m["mem"])) if parent is not None else None
        return self.by_key.get(key)

    def closest(self, text: str, n: int = 3) -> list[str]:
        """The keys nearest to a mistyped key or an unmatched device name (difflib ratio on
        lower-cased key and name), for the error message."""
        t = text.lower().replace("nvidia", "").replace("tesla", "").replace("amd instinct", "").strip()
        scored = []
        for d in self.devices:
            score = max(difflib.SequenceMatcher(None, t, d.key).ratio(),
                        difflib.SequenceMatcher(None, t, d.name.lower().replace("nvidia", "").strip()).ratio())
            if t and d.key.startswith(t):
                score += 0.5  # "h100" -> every h100-* row first
            scored.append((score, d.key))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [k for score, k in scored[:n] if score >= 0.4]


# "NVIDIA A100-SXM4-40GB MIG 1g.5gb", "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "... MIG 1g.10gb+me"
# RE2 (namematch): `\s+MIG` tried from every space of a long run was quadratic in `re` (#45)
MIG = namematch.compile(r"\s+MIG\s+(?P<g>\d+)g\.(?P<mem>\d+)gb", ignorecase=True)


def mig_spec(parent: DeviceSpec, g: int, mem_gb: float) -> DeviceSpec | None:
    """A MIG slice of `parent`: peaks × g/mig_slices (the MIG user guide's "Fraction of SMs"),
    bandwidth × mem/parent memory (its "Fraction of Memory"). None when the parent cannot be
    split or the profile does not fit it."""
    if not parent.mig_slices or not parent.memory_gb or not 0 < g <= parent.mig_slices or mem_gb > parent.memory_gb:
        return None
    f_sm, f_mem = g / parent.mig_slices, mem_gb / parent.memory_gb
    return replace(
        parent, key=f"{parent.key}/mig-{g}g.{mem_gb:g}gb", name=f"{parent.name}, MIG {g}g.{mem_gb:g}gb",
        tflops={k: v * f_sm for k, v in parent.tflops.items()},
        bandwidth_gbs=parent.bandwidth_gbs * f_mem if parent.bandwidth_gbs else None, memory_gb=mem_gb,
        notes=f"MIG slice: {g}/{parent.mig_slices} of the SMs, {mem_gb:g}/{parent.memory_gb:g} GB of the memory of "
              f"{parent.key} (approximate: whole-GPU MIG mode runs slightly fewer SMs than the full GPU)",
        mig_slices=None)


def parse_specs(text: str) -> SpecTable:
    data = tomllib.loads(text)
    rows = []
    for i, row in enumerate(data.get("device", [])):
        try:
            tfl = {k: float(v) for k, v in row.get("tflops", {}).items()}
            unknown = set(tfl) - set(DTYPES)
            if unknown:
                raise ValueError(f"unknown dtype(s) {sorted(unknown)}")
            rows.append(
                DeviceSpec(
                    key=row["key"].lower(),
                    name=row["name"],
                    vendor=row.get("vendor", ""),
                    patterns=tuple(re.compile(p, re.IGNORECASE) for p in row["match"]),
                    tflops=tfl,
                    bandwidth_gbs=_opt_float(row.get("bandwidth_gbs")),
                    memory_gb=_opt_float(row.get("memory_gb")),
                    source=row["source"],
                    notes=row.get("notes", ""),
                    mig_slices=row.get("mig_slices"),
                    arch=row.get("arch"),
                )
            )
        except (KeyError, ValueError, re.error) as e:
            raise ValueError(f"specs.toml: device #{i + 1}: {e}") from None
    devices = tuple(rows)
    by_key = {d.key: d for d in devices}
    return SpecTable(devices=devices, by_key=by_key, archs=_parse_archs(data.get("arch", []), by_key))


def _parse_archs(entries: list[dict], by_key: dict[str, DeviceSpec]) -> dict[str, ArchInfo]:
    fields = set(ArchInfo.__dataclass_fields__)
    out = {}
    for i, a in enumerate(entries):
        unknown = set(a) - fields
        if unknown or "arch" not in a or "vendor" not in a or "family" not in a:
            raise ValueError(f"specs.toml: arch #{i + 1}: needs arch, vendor, family; unknown keys {sorted(unknown)}")
        if a.get("assume") and a["assume"] not in by_key:
            raise ValueError(f"specs.toml: arch {a['arch']}: assume = {a['assume']!r} is no device row")
        out[a["arch"]] = ArchInfo(**a)
    return out


@lru_cache(maxsize=1)
def load_specs() -> SpecTable:
    """The table shipped with the package (src/trainprof/hardware/specs.toml)."""
    text = resources.files("trainprof.hardware").joinpath("specs.toml").read_text("utf-8")
    return parse_specs(text)


def unknown_key_message(key: str) -> str:
    """`--gpu-spec KEY` names no row: one line with the nearest keys."""
    near = load_specs().closest(key)
    hint = f"; closest: {', '.join(near)}" if near else ""
    return f"--gpu-spec {key}: no such row{hint} (see `trainprof specs`)"


def unmatched_device_message(device_name: str) -> str:
    """A device name that maps to no single row: what to pass instead, --gpu-spec keys first."""
    table = load_specs()
    hits = table.candidates(device_name)
    why = f"matches several rows ({', '.join(hits)})" if len(hits) > 1 else "is not in the spec table"
    near = hits if len(hits) > 1 else table.closest(device_name)
    try_keys = f"pass --gpu-spec {' or '.join(near)} if it is one of those, or " if near else "pass "
    return f"device {device_name!r} {why}: {try_keys}--peak-tflops and --peak-bandwidth-gbs"


def peak_dtype_for(compute_dtype: str, *, tf32_matmul: bool) -> str:
    """Which peak column a run is measured against.

    Mixed precision counts against the 16-bit tensor peak (the usual, slightly flattering
    convention: some ops stay fp32). fp32 runs use the TF32 peak when PyTorch is allowed to
    use TF32 for matmuls (torch.backends.cuda.matmul.allow_tf32), else plain fp32.
    """
    if compute_dtype in ("bf16", "fp16", "fp8"):
        return compute_dtype
    if compute_dtype == "fp32":
        return "tf32" if tf32_matmul else "fp32"
    raise ValueError(f"unknown dtype {compute_dtype!r}")


def _opt_float(v: object) -> float | None:
    return None if v is None else float(v)  # type: ignore[arg-type]
