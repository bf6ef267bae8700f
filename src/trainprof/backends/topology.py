"""Read the machine's NUMA nodes, GPUs and this process's CPU affinity (Linux sysfs; NVML for
GPU names when `nvidia-ml-py` is installed), and set the affinity.

Every path is under `root` so tests can point it at a fake sysfs tree. A machine or container
without a piece (no node folder, no PCI tree, no NVML) still gets a Topology, with a note
saying what was assumed. The data types and all decisions are in hardware/numa.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

from trainprof.hardware.numa import Gpu, Topology, format_cpulist, parse_cpulist, visible_gpus

VENDORS = {"0x10de": "NVIDIA", "0x1002": "AMD"}
# PCI class code >> 8: VGA controller, 3D controller (data-centre NVIDIA), display controller (AMD Instinct)
GPU_CLASSES = {"0x0300", "0x0302", "0x0380"}


def current_affinity() -> tuple[int, ...]:
    """The CPUs this thread may run on; every CPU where the OS has no affinity call (macOS)."""
    if hasattr(os, "sched_getaffinity"):
        return tuple(sorted(os.sched_getaffinity(0)))
    return tuple(range(os.cpu_count() or 1))


def set_affinity(cpus: Iterable[int]) -> int:
    """Bind this process to `cpus`: the calling thread, and every other thread still on the
    original mask (sched_setaffinity(0) moves only the caller; threads started earlier, say an
    OpenMP pool, keep theirs). Threads created later inherit the mask. The same walk over
    /proc/self/task as torch/numa/binding.py. Returns how many threads were moved."""
    cpus = set(cpus)
    original = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    if cpus == original:
        return 0
    moved = 1
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return moved
    for tid in tids:  # the calling thread is on `cpus` by now, so it is skipped
        try:
            if os.sched_getaffinity(tid) == original:
                os.sched_setaffinity(tid, cpus)
                moved += 1
        except OSError:  # the thread exited meanwhile
            pass
    return moved


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _nodes(root: Path, notes: list[str]) -> dict[int, tuple[int, ...]]:
    base = root / "sys/devices/system/node"
    nodes, memory_only = {}, []
    for d in sorted(base.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        cpus = parse_cpulist(_read(d / "cpulist") or "")
        if cpus:
            nodes[int(d.name[4:])] = cpus
        else:
            memory_only.append(int(d.name[4:]))
    if memory_only:  # e.g. a GH200's GPU memory, CXL expanders, HBM in flat mode
        notes.append(f"NUMA nodes without CPUs (memory only) left out: {format_cpulist(memory_only)}")
    if nodes:
        notes.append(f"NUMA nodes: {base}")
        return nodes
    online = _read(root / "sys/devices/system/cpu/online")
    cpus = parse_cpulist(online) if online else tuple(range(os.cpu_count() or 1))
    notes.append(f"no NUMA nodes in {base}: one node 0 with every CPU "
                 f"({'sys/devices/system/cpu/online' if online else 'os.cpu_count()'})")
    return {0: cpus}


def _siblings(root: Path, cpus: Iterable[int]) -> dict[int, tuple[int, ...]]:
    out = {}
    for c in cpus:
        topo = root / f"sys/devices/system/cpu/cpu{c}/topology"
        # core_cpus_list is the current name (Linux 5.6+), thread_siblings_list the old one
        text = _read(topo / "core_cpus_list") or _read(topo / "thread_siblings_list")
        if text:
            out[c] = parse_cpulist(text)
    return out


def _bus_id(raw: str | bytes) -> str:
    """NVML's "00000000:3B:00.0" → sysfs's "0000:3b:00.0"."""
    s = (raw.decode() if isinstance(raw, bytes) else raw).strip().lower()
    domain, _, rest = s.partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def _nvml_names(notes: list[str]) -> dict[str, str]:
    """Bus id → name from NVML. Names only: NVML's index order is not guaranteed to be CUDA's
    (NVML docs, nvmlDeviceGetIndex), so the order comes from the bus ids."""
    try:
        import pynvml
    except ImportError:
        notes.append("NVML: nvidia-ml-py not installed (pip install 'trainprof[gpu]'); GPU names from PCI ids")
        return {}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        notes.append(f"NVML unavailable ({e}); GPU names from PCI ids")
        return {}
    try:
        out = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            out[_bus_id(pynvml.nvmlDeviceGetPciInfo(h).busId)] = name.decode() if isinstance(name, bytes) else name
        notes.append(f"NVML: {len(out)} GPU{'s' if len(out) != 1 else ''}")
        return out
    except pynvml.NVMLError as e:
        notes.append(f"NVML failed while listing GPUs ({e}); GPU names from PCI ids")
        return {}
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _pci_gpus(root: Path, names: dict[str, str]) -> tuple[list[Gpu], str | None]:
    """GPUs on the PCI bus in bus id order: CUDA's order with CUDA_DEVICE_ORDER=PCI_BUS_ID, and
    its default (FASTEST_FIRST) order on machines whose GPUs are all the same model."""
    found: dict[str, list[Gpu]] = {}
    base = root / "sys/bus/pci/devices"
    for d in sorted(base.glob("*")) if base.is_dir() else []:
        vendor, cls = _read(d / "vendor"), _read(d / "class")
        if vendor not in VENDORS or not cls or cls[:6] not in GPU_CLASSES:
            continue
        node = _read(d / "numa_node")
        name = names.get(d.name) or f"{VENDORS[vendor]} [{vendor[2:]}:{(_read(d / 'device') or '0x?')[2:]}]"
        found.setdefault(VENDORS[vendor], []).append(
            Gpu(0, d.name, name, int(node) if node and node.lstrip("-").isdigit() else -1,
                parse_cpulist(_read(d / "local_cpulist") or "")))
    for bus in sorted(set(names) - {g.bus_id for gs in found.values() for g in gs}):
        found.setdefault("NVIDIA", []).append(Gpu(0, bus, names[bus], -1, ()))  # NVML sees it, sysfs does not
    # CUDA numbers NVIDIA GPUs only; an AMD iGPU beside them is not device 0.
    vendor = "NVIDIA" if "NVIDIA" in found else "AMD" if "AMD" in found else None
    gpus = sorted(found.get(vendor, []) if vendor else [], key=lambda g: g.bus_id)
    return [Gpu(i, g.bus_id, g.name, g.numa_node, g.cpus) for i, g in enumerate(gpus)], vendor


def read_topology(root: str | os.PathLike = "/", *, env: Mapping[str, str] | None = None,
                  nvml: bool | None = None, affinity: Iterable[int] | None = None) -> Topology:
    """The machine under `root`. `nvml` (default: only when root is "/") asks NVML for GPU names;
    `env` (default os.environ) supplies CUDA_VISIBLE_DEVICES; `affinity` defaults to this
    process's."""
    root = Path(root)
    env = os.environ if env is None else env
    notes: list[str] = []
    nodes = _nodes(root, notes)
    names = _nvml_names(notes) if (nvml if nvml is not None else root == Path("/")) else {}
    gpus, vendor = _pci_gpus(root, names)
    # ROCm honours HIP_VISIBLE_DEVICES first, then CUDA_VISIBLE_DEVICES, with the same syntax
    var = "HIP_VISIBLE_DEVICES" if vendor == "AMD" and "HIP_VISIBLE_DEVICES" in env else "CUDA_VISIBLE_DEVICES"
    gpus, note = visible_gpus(gpus, env.get(var), var)
    if note:
        notes.append(note)
    if any(g.numa_node < 0 for g in gpus):
        notes.append("GPU NUMA node -1 (firmware does not say, usual on one-node machines): assumed node 0")
    all_cpus = sorted({c for cpus in nodes.values() for c in cpus})
    return Topology(nodes=nodes, gpus=tuple(gpus),
                    affinity=tuple(sorted(set(affinity))) if affinity is not None else current_affinity(),
                    siblings=_siblings(root, all_cpus), notes=tuple(notes))
