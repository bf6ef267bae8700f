"""The chart files for report.md and `--plots` (roofline.png/.svg, tune.png): report.html's own
Vega-Lite specs (report/charts.py, the one definition of each chart and its colours), drawn
to PNG and SVG by vl-convert (Vega's renderer in an embedded JavaScript engine, no browser).

Why not a second chart stack: the roofline and the ladder used to be drawn twice (matplotlib
here, Vega-Lite for the page) with a copied colour map, and the two drifted (labels, marker
sizes). Cost (docs/benchmarks.md, "Chart files"): +0.42 s and +85 MB for a roofline's PNG
and SVG, most of it the engine starting; only with `--plots`,
`run --profile` and `tune`, never on the `analyze` path (tests/integration/test_analyze_imports.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from trainprof.recordtypes.analysis import Analysis, RooflineHeader
from trainprof.recordtypes.base import as_struct
from trainprof.recordtypes.tune import Tune
from trainprof.report import charts
from trainprof.report import chart_registry

PNG_SCALE = 1.0  # CSS px per image px: ~60-200 KB a chart (one per rank); the SVG beside it is the sharp one
FILE_WIDTH = 640  # px: a chart the page sizes to its container ("width": "container") gets this in a file
# the Vega-Lite 5 line the specs are written for ($schema v5); the page's vendored 5.23 is not
# among vl-convert's bundled versions, 5.21 is the nearest (the default would be 6.x)
VL_VERSION = "5.21"


def _static(spec: dict[str, Any]) -> dict[str, Any]:
    """The page's spec for a file: a fixed width where the page sizes it to its container."""
    return {**spec, "width": FILE_WIDTH} if spec.get("width") == "container" else spec


def _skipped(stem: str, exts: tuple[str, ...], why: str) -> list[Path]:
    # a chart file is a picture of numbers already in the record: never worth the run it belongs
    # to (on the H200 of 2026-11-28 a machine without vl-convert lost a profiled run this way)
    names = "/".join(f"{stem}.{e}" for e in exts)
    print(f"trainprof: note: {names} not written: {why}; report.html draws the same chart", file=sys.stderr)
    return []


# vl-convert draws in a child process. Its JavaScript engine (V8) reserves tens of GB of
# address space at start and aborts the whole process (SIGTRAP, exit 133) when it cannot: under
# `ulimit -v` (6, 16 and 40 GB tried, issue #45) `profile` died that way after the program had
# finished, losing the program's exit code and the run folder. In a child, such a death is a
# chart file not written, with a note. The child imports only vl_convert (-I: no PYTHONPATH, no
# site hooks of the profiled program's environment); it gets the job as JSON on stdin and
# returns each file as an 8-byte length and the bytes. allowed_base_urls=[]: the data is inline, no
# URL may be fetched while drawing (nothing of a record leaves the machine).
_DRAW = r"""
import json, struct, sys
import vl_convert
job = json.load(sys.stdin)
for ext in job["exts"]:
    if ext == "png":
        data = vl_convert.vegalite_to_png(job["spec"], vl_version=job["vl"], scale=job["scale"], allowed_base_urls=[])
    else:
        data = vl_convert.vegalite_to_svg(job["spec"], vl_version=job["vl"], allowed_base_urls=[]).encode()
    sys.stdout.buffer.write(struct.pack("<Q", len(data)) + data)
"""
DRAW_TIMEOUT_S = 120  # a roofline takes ~0.5 s; a wedged engine must not hold the run


def _draw(spec: dict[str, Any], exts: tuple[str, ...]) -> list[bytes] | str:
    """The files drawn by vl-convert in a child process (_DRAW), or why not, in a few words."""
    import json
    import signal
    import struct
    import subprocess

    from trainprof.jsontext import finite

    job = json.dumps({"spec": finite(spec), "exts": list(exts), "vl": VL_VERSION, "scale": PNG_SCALE})
    try:
        p = subprocess.run([sys.executable, "-I", "-c", _DRAW], input=job.encode(), capture_output=True,
                           timeout=DRAW_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"vl-convert took more than {DRAW_TIMEOUT_S} s"
    except OSError as e:
        return f"vl-convert could not start ({e.strerror or e})"
    if p.returncode < 0:
        try:
            name = signal.Signals(-p.returncode).name
        except ValueError:
            name = f"signal {-p.returncode}"
        return (f"vl-convert died of {name} (its JavaScript engine reserves tens of GB of address space: "
                "a `ulimit -v` below that kills it)")
    if p.returncode:
        last = (p.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        if "No module named 'vl_convert'" in last:
            return "vl-convert-python is not installed (pip install vl-convert-python)"
        return f"vl-convert failed ({last[:200]})"
    out, pos = [], 0
    for _ in exts:
        if pos + 8 > len(p.stdout):
            return "vl-convert returned less than asked"
        (n,) = struct.unpack_from("<Q", p.stdout, pos)
        out.append(p.stdout[pos + 8:pos + 8 + n])
        pos += 8 + n
    return out


def _installed() -> bool:
    import importlib.util

    if "vl_convert" in sys.modules:  # imported already (or marked missing: None)
        return sys.modules["vl_convert"] is not None
    return importlib.util.find_spec("vl_convert") is not None


def write_chart_files(spec: dict[str, Any], out_dir: Path, stem: str, exts: tuple[str, ...]) -> list[Path]:
    """`stem`.png / `stem`.svg in `out_dir` (atomic: temp name, then rename); none, with a note on
    stderr, where vl-convert is missing, fails to draw or dies (drawn in a child process, _DRAW)."""
    if not _installed():
        return _skipped(stem, exts, "vl-convert-python is not installed (pip install vl-convert-python)")

    from trainprof import atomic

    drawn = _draw(_static(spec), exts)
    if isinstance(drawn, str):  # the renderer's own failure: say it, keep the run
        return _skipped(stem, exts, drawn)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for ext, data in zip(exts, drawn):
        final = out_dir / f"{stem}.{ext}"
        atomic.write_bytes(final, data)
        written.append(final)
    return written


def write_roofline(header: RooflineHeader, points: list[dict], out_dir: Path, stem: str, title: str) -> list[Path]:
    """roofline.png and roofline.svg in `out_dir` from given points (charts.roofline; tests)."""
    return write_chart_files(charts.roofline(header, points, title), out_dir, stem, ("png", "svg"))


def write_analysis_plots(result: dict | Analysis, out: Path, only: list[int] | None = None) -> list[Path]:
    """Each exported chart of an analysis (report/chart_registry.py, scope "profile": the
    roofline) for every rank, or the ranks at the indices `only` names: `<stem>.*`, or
    `<stem>_rank<N>.*` when there are several ranks."""
    a = as_struct(result, Analysis)
    written = []
    many = len(a.ranks) > 1
    for i, r in enumerate(a.ranks):
        if only is not None and i not in only:
            continue
        for c in (c for c in chart_registry.CHARTS if c.scope == "profile" and c.export):
            spec = c.build(r, f"analysis.ranks[{i}]")
            if spec is not None:
                stem, exts = c.export
                written += write_chart_files(spec, out, f"{stem}_rank{r.rank}" if many else stem, exts)
    return written


def write_tune_chart(doc: Tune, out: Path) -> Path | None:
    """tune.png: the exported chart of a tune record (report/chart_registry.py: the ladder, each
    knob's tokens/s relative to the baseline, kept knobs green); None when none was drawn."""
    from trainprof.report.loader import Bundle

    b = Bundle(folder=out, name="", tune=doc)
    written = []
    for c in (c for c in chart_registry.CHARTS if c.scope == "page" and c.export):
        spec = c.build(b)
        if spec is not None:
            written += write_chart_files(spec, out, *c.export)
    return written[0] if written else None  # not drawn (a note says why): the tune's records stand
