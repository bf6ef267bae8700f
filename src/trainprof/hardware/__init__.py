"""Device peaks as data (specs.toml), name matching, overrides. No device access here."""

from trainprof.hardware.specs import DeviceSpec, SpecTable, load_specs, peak_dtype_for

__all__ = ["DeviceSpec", "SpecTable", "load_specs", "peak_dtype_for"]
