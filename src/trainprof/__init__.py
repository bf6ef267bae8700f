"""trainprof: make PyTorch training fast and show why it is slow.

The public API is small: `Monitor` for any training loop, the records it produces, and the
reference workload's config. Importing trainprof touches no device.

The API names are imported on first use (PEP 562 module `__getattr__`): every
`python -m trainprof ...` imports this package first, and `trainprof analyze` needs neither
Monitor nor its imports (~20 ms of a ~0.5 s command).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainprof.errors import TrainprofError

if TYPE_CHECKING:
    from trainprof.collect.monitor import Monitor
    from trainprof.recordtypes.run import DeviceInfo, RunRecord, StepRecord, Summary

__version__ = "0.1.0"
__all__ = ["Monitor", "RunRecord", "StepRecord", "Summary", "DeviceInfo", "TrainprofError", "__version__"]

_LAZY = {
    "Monitor": "trainprof.collect.monitor",
    "RunRecord": "trainprof.recordtypes.run",
    "StepRecord": "trainprof.recordtypes.run",
    "Summary": "trainprof.recordtypes.run",
    "DeviceInfo": "trainprof.recordtypes.run",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trainprof' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
