"""`trainprof numa`: NUMA nodes, the GPUs on them, this process's affinity and the binding of
each local rank (docs/numa.md)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from trainprof.errors import ConfigError, ResourceError
from trainprof.flags import add_flags, build, section
from trainprof.options import OutputOptions

SCHEMA = "trainprof.numa/1"


@dataclass(frozen=True)
class NumaCommand:
    """`trainprof numa`'s configuration (its flags: trainprof/flags.py)."""

    nproc: int | None = None
    """local ranks to plan for (default: the number of GPUs, or 1 without)"""
    cpu: bool = False
    """plan CPU (gloo) ranks even when there are GPUs"""
    output: OutputOptions = section(OutputOptions(), flags=("json",), helps={
        "json": f"print a JSON object (schema {SCHEMA})"})
    """what is printed"""

    def __post_init__(self) -> None:
        if self.nproc is not None and self.nproc < 1:
            raise ConfigError("nproc", "must be ≥ 1", got=self.nproc)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("numa", help="show NUMA nodes, GPUs and the CPU binding of each local rank",
                       description="Show the NUMA nodes and their CPUs, each GPU's node (sysfs, NVML "
                       "names), this process's CPU affinity, and for each local rank the cores to bind "
                       "it to, as a numactl command and as os.sched_setaffinity (`trainprof run "
                       "--bind-numa` applies it).")
    add_flags(p, NumaCommand)
    p.set_defaults(func=numa)


def _cpus(cpus: tuple[int, ...]) -> dict:
    from trainprof.hardware.numa import format_cpulist

    return {"cpus": list(cpus), "cpulist": format_cpulist(cpus)}


def to_dict(topo, bindings, nproc: int) -> dict:  # noqa: ANN001
    return {
        "schema": SCHEMA,
        "nodes": [{"node": n, **_cpus(c)} for n, c in sorted(topo.nodes.items())],
        "gpus": [{"index": g.index, "name": g.name, "bus_id": g.bus_id, "numa_node": g.numa_node, **_cpus(g.cpus)}
                 for g in topo.gpus],
        "affinity": _cpus(topo.affinity),
        "nproc": nproc,
        "bindings": [{"local_rank": b.local_rank, "gpu": b.gpu, "node": b.node, **_cpus(b.cpus),
                      "numactl": b.numactl_command, "python": b.python_command, "reason": b.reason}
                     for b in bindings],
        "notes": list(topo.notes),
    }


def numa(args: argparse.Namespace) -> int:
    from trainprof.report.console import console
    from trainprof.report.fit import FitTable

    from trainprof.backends.topology import read_topology
    from trainprof.hardware.numa import format_cpulist, plan_binding

    cmd = build(NumaCommand, args)
    topo = read_topology()
    use_gpus = not cmd.cpu and bool(topo.gpus)
    nproc = cmd.nproc if cmd.nproc is not None else (len(topo.gpus) if use_gpus else 1)
    try:
        bindings = plan_binding(topo, nproc, use_gpus=use_gpus)
    except ResourceError as e:
        raise ResourceError(f"--nproc {nproc}: {e}") from None
    if cmd.output.json:
        print(json.dumps(to_dict(topo, bindings, nproc), indent=2))
        return 0

    con = console()
    t = FitTable(title="NUMA nodes", title_justify="left")
    for col in ("node", "CPUs", "count"):
        t.add_column(col, justify="right" if col != "CPUs" else "left")
    for n, cpus in sorted(topo.nodes.items()):
        t.add_row(str(n), format_cpulist(cpus), str(len(cpus)))
    con.print(t)
    if topo.gpus:
        g = FitTable(title="GPUs (CUDA order)", title_justify="left")
        for col in ("GPU", "name", "bus id", "node", "local CPUs"):
            g.add_column(col)
        for gpu in topo.gpus:
            g.add_row(str(gpu.index), gpu.name, gpu.bus_id,
                      str(gpu.numa_node) if gpu.numa_node >= 0 else "? (0)", format_cpulist(gpu.cpus) or "?")
        con.print(g)
    else:
        con.print("no GPUs found (sysfs/NVML)")
    con.print(f"process affinity: {format_cpulist(topo.affinity)} ({len(topo.affinity)} CPUs)", highlight=False)
    b = FitTable(title=f"Binding for {nproc} local rank{'s' if nproc > 1 else ''}"
              f" ({'one GPU each' if use_gpus else 'CPU ranks'})", title_justify="left")
    for col in ("rank", "GPU", "node", "CPUs", "why"):
        b.add_column(col, justify="right" if col in ("rank", "node") else "left")
    for r in bindings:
        b.add_row(str(r.local_rank), "-" if r.gpu is None else str(r.gpu), str(r.node), format_cpulist(r.cpus),
                  r.reason)
    con.print(b)
    # printed plainly (never wrapped) so they can be copied
    print("commands (numactl as a launch prefix, or the Python call first thing in the rank):")
    for r in bindings:
        print(f"  rank {r.local_rank}: {r.numactl_command}")
        print(f"  {' ' * len(str(r.local_rank))}       {r.python_command}")
    for note in topo.notes:
        print(f"note: {note}")
    print("apply to a run: trainprof run --nproc N --bind-numa (docs/numa.md)")
    return 0
