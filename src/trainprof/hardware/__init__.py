"""Device peaks as data (specs.toml), name matching, overrides. No device access here.

The names below load on first use (PEP 562): importing a light module of this package
(hardware/overrides.py) must not parse the spec table."""

__all__ = ["DeviceSpec", "SpecTable", "load_specs", "peak_dtype_for"]


def __getattr__(name: str):  # noqa: ANN202
    if name in __all__:
        from trainprof.hardware import specs

        return getattr(specs, name)
    raise AttributeError(f"module 'trainprof.hardware' has no attribute {name!r}")
