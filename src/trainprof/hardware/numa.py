"""NUMA binding as pure logic: which cores each local rank should run on, and the commands.

Why bind: a rank's host memory (pinned batches, the Python heap, DataLoader pages) comes from
the NUMA node of the core that first touches it, and its GPU hangs off one socket's PCIe root
complex. A rank running on the other socket reads memory and copies H2D across the
inter-socket link (UPI/xGMI), and ranks whose intra-op threads share cores slow each other
down. The rules below are those of torchrun's `--numa-binding=exclusive`
(torch/numa/binding.py), extended to CPU-only (gloo) ranks; docs/numa.md has the method.

No file or device access here: `backends/topology.py` reads the machine into a `Topology`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainprof.errors import ResourceError


@dataclass(frozen=True)
class Gpu:
    index: int
    """CUDA index as this process sees it (after CUDA_VISIBLE_DEVICES), in PCI bus id order"""
    bus_id: str
    """PCI address in sysfs form, e.g. 0000:3b:00.0"""
    name: str
    """NVML's name, or the PCI vendor:device ids without NVML"""
    numa_node: int
    """the node the GPU's PCIe root complex belongs to; -1: the firmware did not say"""
    cpus: tuple[int, ...]
    """the GPU's local CPUs (sysfs local_cpulist)"""

    @property
    def node(self) -> int:
        """-1 (unknown) counts as node 0, as torch/numa/binding.py does: on one-node machines
        the firmware often leaves it unset."""
        return max(self.numa_node, 0)


@dataclass(frozen=True)
class Topology:
    nodes: dict[int, tuple[int, ...]]
    """NUMA node → its CPUs (nodes without CPUs, e.g. GPU or CXL memory, are left out)"""
    gpus: tuple[Gpu, ...]
    """visible GPUs in CUDA index order"""
    affinity: tuple[int, ...]
    """the CPUs this process may run on (sched_getaffinity): cgroups, taskset, Slurm"""
    siblings: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """CPU → the hardware threads of its physical core (SMT); a missing CPU is its own core"""
    notes: tuple[str, ...] = ()
    """where each part came from, and what was assumed"""


@dataclass(frozen=True)
class RankBinding:
    local_rank: int
    gpu: int | None
    """CUDA index of the rank's GPU; None for a CPU rank"""
    node: int
    cpus: tuple[int, ...]
    numactl_command: str
    reason: str

    @property
    def python_command(self) -> str:
        return f"os.sched_setaffinity(0, {python_cpuset(self.cpus)})"


def parse_cpulist(text: str) -> tuple[int, ...]:
    """The kernel's cpulist format ("0-3,8-11,14", also "0-31:2" strides) → sorted CPUs."""
    out: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        try:
            rng, _, stride = part.partition(":")
            lo, _, hi = rng.partition("-")
            step = int(stride) if stride else 1
            out.update(range(int(lo), int(hi or lo) + 1, step))
        except ValueError:
            raise ValueError(f"not a CPU list: {text.strip()!r}") from None
    return tuple(sorted(out))


def _runs(cpus: tuple[int, ...] | list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for c in sorted(set(cpus)):
        if runs and c == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


def format_cpulist(cpus: tuple[int, ...] | list[int] | set[int]) -> str:
    """Inverse of parse_cpulist, compact ranges: (0, 1, 2, 3, 8, 14) → "0-3,8,14"."""
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in _runs(list(cpus)))


def python_cpuset(cpus: tuple[int, ...]) -> str:
    """A set literal for os.sched_setaffinity, runs of 3+ CPUs as ranges: {0, *range(8, 16)}."""
    parts: list[str] = []
    for a, b in _runs(cpus):
        if b - a >= 2:
            parts.append(f"*range({a}, {b + 1})")
        else:
            parts.extend(str(c) for c in range(a, b + 1))
    return "{" + ", ".join(parts) + "}" if parts else "set()"


def visible_gpus(gpus: list[Gpu], cuda_visible_devices: str | None,
                 var: str = "CUDA_VISIBLE_DEVICES") -> tuple[list[Gpu], str | None]:
    """Apply CUDA_VISIBLE_DEVICES given as integer indices; renumber as CUDA does.

    CUDA rules (CUDA C Programming Guide, "CUDA Environment Variables"): listed devices are
    visible in the listed order, and the list stops at the first invalid index ("0,2,-1,1"
    → 0 and 2). UUIDs (GPU-…, MIG-…) are not mapped here: all GPUs are shown, with a note."""
    if cuda_visible_devices is None:
        return gpus, None
    items = [s.strip() for s in cuda_visible_devices.split(",")]
    if any(s and not s.lstrip("-").isdigit() for s in items):
        return gpus, (f"{var}={cuda_visible_devices} names UUIDs, which are not mapped: "
                      "showing every GPU")
    chosen: list[Gpu] = []
    for s in items:
        if not s.isdigit() or int(s) >= len(gpus) or any(g.bus_id == gpus[int(s)].bus_id for g in chosen):
            break
        chosen.append(gpus[int(s)])
    out = [Gpu(i, g.bus_id, g.name, g.numa_node, g.cpus) for i, g in enumerate(chosen)]
    return out, f"{var}={cuda_visible_devices}: {len(out)} of {len(gpus)} GPUs visible"


def _split(cpus: list[int], k: int, siblings: dict[int, tuple[int, ...]]) -> list[tuple[int, ...]]:
    """`cpus` into k disjoint, contiguous, even shares, whole physical cores when there are at
    least k of them (two ranks on the two hardware threads of one core would fight for its
    execution units); the first ranks take one more when it does not divide evenly."""
    cores: dict[int, list[int]] = {}
    for c in sorted(cpus):
        cores.setdefault(min(siblings.get(c, (c,))), []).append(c)
    units = [cores[key] for key in sorted(cores)]
    if len(units) < k:  # fewer cores than ranks: share cores, one hardware thread each
        units = [[c] for unit in units for c in unit]
    base, extra = divmod(len(units), k)
    out, start = [], 0
    for i in range(k):
        n = base + (1 if i < extra else 0)
        out.append(tuple(sorted(c for unit in units[start:start + n] for c in unit)))
        start += n
    return out


def numactl_command(node: int, cpus: tuple[int, ...], node_cpus: tuple[int, ...]) -> str:
    if set(cpus) == set(node_cpus):
        return f"numactl --cpunodebind={node} --membind={node}"
    return f"numactl --physcpubind={format_cpulist(cpus)} --membind={node}"


def plan_binding(topology: Topology, local_world_size: int, *, use_gpus: bool = True) -> list[RankBinding]:
    """The cores of each local rank.

    GPU ranks: rank r drives GPU r and runs on the allowed CPUs of that GPU's NUMA node.
    CPU ranks (no GPUs, or `use_gpus=False`): rank r goes to the r-th node with allowed CPUs,
    round-robin. Either way, the ranks placed on one node split its allowed CPUs evenly and
    disjointly (`_split`), so no two ranks' thread pools share a core.
    Raises ResourceError when a rank would get no CPU."""
    n = local_world_size
    if n < 1:
        raise ValueError(f"local_world_size must be ≥ 1, got {n}")
    allowed = set(topology.affinity)
    gpus = topology.gpus if use_gpus else ()
    if gpus:
        if n > len(gpus):
            raise ResourceError(f"{n} local ranks but {len(gpus)} visible GPU{'s' if len(gpus) != 1 else ''}: "
                                "one GPU per rank")
        node_of = [g.node for g in gpus[:n]]
    else:
        usable = [node for node in sorted(topology.nodes) if allowed & set(topology.nodes[node])]
        if not usable:
            raise ResourceError(f"no NUMA node has a CPU this process may use (affinity {format_cpulist(allowed)})")
        node_of = [usable[r % len(usable)] for r in range(n)]

    shares: dict[int, tuple[int, ...]] = {}
    node_cpus: dict[int, tuple[int, ...]] = {}
    n_avail: dict[int, int] = {}
    for node in dict.fromkeys(node_of):
        ranks = [r for r in range(n) if node_of[r] == node]
        # the node's CPUs from sysfs; a GPU whose node is not listed brings its local CPUs
        cpus = (topology.nodes.get(node) or gpus[ranks[0]].cpus) if gpus else topology.nodes[node]
        avail = sorted(allowed & set(cpus))
        if len(avail) < len(ranks):
            k, m = len(ranks), len(avail)
            raise ResourceError(f"{k} local rank{'s' if k > 1 else ''} ({', '.join(map(str, ranks))}) on NUMA node "
                                f"{node} but only {m} CPU{'s' if m != 1 else ''} this process may use there "
                                f"(node CPUs {format_cpulist(cpus) or 'none'}, affinity {format_cpulist(allowed)}): "
                                "each rank needs at least one")
        node_cpus[node], n_avail[node] = cpus, len(avail)
        shares.update(zip(ranks, _split(avail, len(ranks), topology.siblings)))

    out = []
    for r in range(n):
        node = node_of[r]
        if gpus:
            where = f"GPU {gpus[r].index} is on NUMA node {node}" + (
                " (unknown: assumed 0)" if gpus[r].numa_node < 0 else "")
        else:
            k = len(set(node_of))
            where = f"CPU rank on node {node}" + (f" (round-robin over {k} nodes)" if k > 1 else "")
        sharing = node_of.count(node)
        split = (f"{sharing} ranks split its {n_avail[node]} allowed CPUs" if sharing > 1
                 else f"all its {n_avail[node]} allowed CPUs")
        out.append(RankBinding(r, gpus[r].index if gpus else None, node, shares[r],
                               numactl_command(node, shares[r], node_cpus[node]), f"{where}; {split}"))
    return out
