"""How this machine's GPUs talk to each other, from `nvidia-smi topo -m` (its matrix: NV# = a
bonded set of # NVLinks; PIX = at most one PCIe bridge; PXB = several PCIe bridges; PHB = through
a PCIe host bridge, the CPU; NODE = between host bridges of one NUMA node; SYS = across NUMA
nodes over the SMP interconnect, QPI/UPI), and the link a collective between them runs over when
the user names none (`bench allreduce`, run.json's machine state). Device code: the only place
that runs nvidia-smi; the parsing is pure and tested on scripted output (tests/data/nvidia_smi/).

The link's generation and figure come from hardware/references.toml: the topology says NVLink
or PCIe, the device's row says which (device_link: an H100 SXM's NVLink 4, an H100 PCIe's
PCIe 5). A topology and a device that disagree (PCIe cards joined by NVLink bridges), or a
device without a row, give no link and a note: never a guess.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Callable

from trainprof.hardware.references import Link, device_link

# worst (slowest, farthest) first: a collective over all GPUs runs at its slowest pair's pace
PCIE_PATHS = ("SYS", "NODE", "PHB", "PXB", "PIX")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # nvidia-smi underlines the headers on a terminal
_GPU = re.compile(r"GPU(\d+)$")
TIMEOUT_S = 10.0  # nvidia-smi answers in < 1 s; a hung driver must not hang a run


@dataclass(frozen=True)
class GpuTopology:
    gpus: int
    kind: str  # "nvlink" (every pair over NVLink) | "pcie" (some pair over PCIe only)
    nvlinks: int | None  # the fewest bonded NVLinks between two GPUs, for "nvlink"
    worst: str  # the slowest pair's path: "NV18", "SYS", "PIX", ...


def parse(text: str) -> dict[tuple[int, int], str]:
    """{(i, j): path} for every pair of GPUs i ≠ j in `nvidia-smi topo -m`'s matrix."""
    lines = [_ANSI.sub("", ln) for ln in text.splitlines()]
    # the column header: an empty first cell, then GPU0 GPU1 ... NIC0 ... CPU Affinity ...
    header = next((ln for ln in lines if "GPU0" in ln and not ln.split("\t")[0].strip()), None)
    if header is None:
        return {}
    cols = [c.strip() for c in header.split("\t")[1:]]
    pairs: dict[tuple[int, int], str] = {}
    for ln in lines:
        cells = ln.split("\t")
        m = _GPU.match(cells[0].strip())
        if not m:
            continue
        for name, cell in zip(cols, cells[1:]):
            c = _GPU.match(name)
            if c and int(c.group(1)) != int(m.group(1)):
                pairs[(int(m.group(1)), int(c.group(1)))] = cell.strip()
    return pairs


def summarise(pairs: dict[tuple[int, int], str]) -> GpuTopology | None:
    """The matrix in one line; None with fewer than two GPUs or a path this code does not know."""
    if not pairs:
        return None
    gpus = len({i for i, _ in pairs})
    nv = [int(p[2:]) for p in pairs.values() if re.fullmatch(r"NV\d+", p)]
    if len(nv) == len(pairs):
        return GpuTopology(gpus, "nvlink", min(nv), f"NV{min(nv)}")
    seen = [p for p in PCIE_PATHS if p in pairs.values()]
    if not seen:
        return None
    return GpuTopology(gpus, "pcie", None, seen[0])


def choose_link(topo: GpuTopology | None, spec_key: str | None) -> tuple[Link | None, str]:
    """The link between the GPUs and how it was chosen, or None and why not."""
    if topo is None:
        return None, "no GPU topology (`nvidia-smi topo -m` unavailable or one GPU)"
    lk = device_link(spec_key, topo.gpus)
    if lk is None:
        return None, f"`nvidia-smi topo -m`: {topo.worst}, but the device ({spec_key or 'unknown'}) has no link row"
    if not lk.key.startswith(topo.kind):
        return None, (
            f"`nvidia-smi topo -m` says {topo.worst} ({topo.kind}) where the device's row says {lk.name}: pass --link"
        )
    note = f"`nvidia-smi topo -m`: {topo.worst} between {topo.gpus} GPUs, {spec_key}"
    if topo.worst == "SYS":  # the pair crosses the sockets: below what one PCIe slot carries
        note += "; some pairs cross the CPU sockets (SYS): expect less than the PCIe figure"
    return lk, note


def read(run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> str | None:
    """`nvidia-smi topo -m`'s text, None where it cannot run (no driver, a CPU machine)."""
    try:
        r = run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def machine_link(
    spec_key: str | None, run: Callable[..., subprocess.CompletedProcess] = subprocess.run
) -> tuple[Link | None, str]:
    """This machine's GPU link (read, parsed, chosen): what `bench allreduce` uses without --link."""
    text = read(run)
    return choose_link(summarise(parse(text)) if text else None, spec_key)


def cuda_link() -> tuple[Link | None, str]:
    """machine_link for the first CUDA device, its spec row found by its name."""
    import torch

    from trainprof.hardware.specs import load_specs

    try:
        name = torch.cuda.get_device_name(0)
    except (RuntimeError, AssertionError):  # no CUDA here after all: no device, no link
        return None, "no CUDA device to name"
    row = load_specs().match(name)
    return machine_link(row.key if row is not None else None)
