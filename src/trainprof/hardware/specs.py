"""Load the dense-peak table and match real device-name strings to exactly one row.

Matching is deliberately strict: a name that matches no row, or more than one, is
"unknown" and gets no MFU. A wrong peak is worse than none (nanoGPT's hard-coded A100
peak makes its H100 MFU ~3x too high).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

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

    def matches(self, device_name: str) -> bool:
        return any(p.search(device_name) for p in self.patterns)

    def peak_tflops(self, dtype: str) -> float | None:
        return self.tflops.get(dtype)


@dataclass(frozen=True)
class SpecTable:
    devices: tuple[DeviceSpec, ...]
    by_key: dict[str, DeviceSpec] = field(default_factory=dict)

    def match(self, device_name: str) -> DeviceSpec | None:
        """The one row whose patterns match `device_name`, else None (unknown or ambiguous)."""
        hits = [d for d in self.devices if d.matches(device_name)]
        return hits[0] if len(hits) == 1 else None

    def candidates(self, device_name: str) -> list[str]:
        return [d.key for d in self.devices if d.matches(device_name)]

    def get(self, key: str) -> DeviceSpec | None:
        return self.by_key.get(key.lower())


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
                )
            )
        except (KeyError, ValueError, re.error) as e:
            raise ValueError(f"specs.toml: device #{i + 1}: {e}") from None
    devices = tuple(rows)
    return SpecTable(devices=devices, by_key={d.key: d for d in devices})


@lru_cache(maxsize=1)
def load_specs() -> SpecTable:
    """The table shipped with the package (src/trainprof/hardware/specs.toml)."""
    text = resources.files("trainprof.hardware").joinpath("specs.toml").read_text("utf-8")
    return parse_specs(text)


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
