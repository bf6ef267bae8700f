"""`trainprof specs`: the dense-peak table, or which row a device name maps to."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from trainprof.flags import add_flags, build, option, section
from trainprof.hardware.specs import DTYPES
from trainprof.options import OutputOptions


@dataclass(frozen=True)
class SpecsCommand:
    """`trainprof specs`'s configuration (its flags: trainprof/flags.py)."""

    match: str | None = option(None, metavar="NAME")
    """show which row a device-name string maps to"""
    output: OutputOptions = section(OutputOptions(), flags=("json",), helps={"json": "machine-readable output"})
    """what is printed"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("specs", help="print the device peak table (dense TFLOP/s, GB/s, sources)")
    add_flags(p, SpecsCommand)
    p.set_defaults(func=specs)


def specs(args: argparse.Namespace) -> int:
    from trainprof.report.console import console
    from trainprof.report.fit import FitTable

    from trainprof.hardware import load_specs

    cmd = build(SpecsCommand, args)
    table = load_specs()
    rows = table.devices
    if cmd.match is not None:
        hit = table.match(cmd.match)
        if hit is None:
            from trainprof.hardware.specs import unmatched_device_message

            why = unmatched_device_message(cmd.match)
            if cmd.output.json:
                print(json.dumps({"name": cmd.match, "match": None, "reason": why,
                                  "closest": table.candidates(cmd.match) or table.closest(cmd.match)}))
            else:
                print(why)
            return 1
        rows = (hit,)
    if cmd.output.json:
        print(json.dumps({"schema": "trainprof.specs/1", "devices": [
            {"key": d.key, "name": d.name, "vendor": d.vendor, "arch": d.arch, "tflops": d.tflops,
             "bandwidth_gbs": d.bandwidth_gbs, "memory_gb": d.memory_gb, "source": d.source,
             "notes": d.notes} for d in rows]}, indent=2))
        return 0
    t = FitTable(title="Dense peak TFLOP/s (no sparsity) and memory bandwidth", title_justify="left")
    for col in ("key", "name", *DTYPES, "GB/s"):
        t.add_column(col, justify="right" if col in DTYPES or col == "GB/s" else "left",
                     no_wrap=col == "key")
    for d in rows:
        t.add_row(d.key, d.name, *(f"{d.tflops[k]:g}" if k in d.tflops else "—" for k in DTYPES),
                  f"{d.bandwidth_gbs:g}" if d.bandwidth_gbs else "—")
    con = console()
    con.print(t)
    con.print("Sources:")
    for d in rows:  # printed plainly so the URLs stay clickable and unwrapped
        print(f"  {d.key}: {d.source}")
    return 0
