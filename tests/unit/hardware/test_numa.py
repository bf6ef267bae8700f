"""NUMA binding: cpulists, the plan worked out by hand, a fake sysfs tree, and `trainprof numa`."""

from __future__ import annotations

import json
import os
import random
import sys
import types

import pytest

from trainprof.backends.topology import read_topology
from trainprof.cli import main
from trainprof.errors import ResourceError
from trainprof.hardware.numa import (Gpu, Topology, format_cpulist, parse_cpulist, plan_binding, python_cpuset,
                                     visible_gpus)


def _r(a: int, b: int) -> tuple[int, ...]:
    return tuple(range(a, b))


# ---- cpulists --------------------------------------------------------------------------------

def test_parse_and_format_cpulist():
    assert parse_cpulist("0-3,8-11,14") == (0, 1, 2, 3, 8, 9, 10, 11, 14)
    assert format_cpulist((0, 1, 2, 3, 8, 9, 10, 11, 14)) == "0-3,8-11,14"
    assert parse_cpulist("0-6:2\n") == (0, 2, 4, 6)  # the kernel's stride form
    assert parse_cpulist("") == () and format_cpulist(()) == ""
    assert format_cpulist({5, 3, 4, 9}) == "3-5,9"
    with pytest.raises(ValueError, match="not a CPU list"):
        parse_cpulist("0-x")


def test_cpulist_round_trip():
    rng = random.Random(0)
    for _ in range(200):
        cpus = tuple(sorted(rng.sample(range(256), rng.randint(1, 64))))
        assert parse_cpulist(format_cpulist(cpus)) == cpus


def test_python_cpuset_is_the_same_set():
    assert python_cpuset((0, 1)) == "{0, 1}"
    assert python_cpuset((0, 1, 2, 3, 8, 9, 14)) == "{*range(0, 4), 8, 9, 14}"
    for cpus in [(0,), (0, 1, 2), (3, 5, 6, 7, 40)]:
        assert eval(python_cpuset(cpus)) == set(cpus)  # noqa: S307 - our own literal


# ---- plan_binding, by hand -------------------------------------------------------------------

def _dgx(affinity: tuple[int, ...] = _r(0, 64), numa_node_of_gpu0: int = 0) -> Topology:
    """2 sockets: GPUs 0-3 on node 0 (cores 0-31), GPUs 4-7 on node 1 (cores 32-63)."""
    nodes = {0: _r(0, 32), 1: _r(32, 64)}
    gpus = tuple(Gpu(i, f"0000:{0x10 * (i + 1):02x}:00.0", "H100", numa_node_of_gpu0 if i == 0 else i // 4,
                     nodes[i // 4]) for i in range(8))
    return Topology(nodes=nodes, gpus=gpus, affinity=affinity)


def test_eight_gpus_eight_ranks_get_eight_disjoint_cores_of_their_node():
    plan = plan_binding(_dgx(), 8)
    for b in plan:
        assert b.gpu == b.local_rank and b.node == b.local_rank // 4
        assert b.cpus == _r(8 * b.local_rank, 8 * b.local_rank + 8)
    assert plan[0].numactl_command == "numactl --physcpubind=0-7 --membind=0"
    assert plan[5].numactl_command == "numactl --physcpubind=40-47 --membind=1"
    assert plan[5].python_command == "os.sched_setaffinity(0, {*range(40, 48)})"
    assert "GPU 5 is on NUMA node 1" in plan[5].reason and "4 ranks split its 32" in plan[5].reason


def test_one_rank_per_node_gets_the_whole_node():
    plan = plan_binding(_dgx(), 1)
    assert plan[0].cpus == _r(0, 32) and plan[0].numactl_command == "numactl --cpunodebind=0 --membind=0"
    two = plan_binding(_dgx(), 2)  # GPUs 0 and 1 both on node 0: halves
    assert [b.cpus for b in two] == [_r(0, 16), _r(16, 32)]


def test_affinity_mask_is_respected():
    plan = plan_binding(_dgx(affinity=_r(4, 12)), 1)  # e.g. taskset -c 4-11 or a Slurm cgroup
    assert plan[0].cpus == _r(4, 12) and plan[0].numactl_command == "numactl --physcpubind=4-11 --membind=0"
    two = plan_binding(_dgx(affinity=_r(4, 12)), 2)
    assert [b.cpus for b in two] == [_r(4, 8), _r(8, 12)]
    with pytest.raises(ResourceError, match=r"1 local rank \(4\) on NUMA node 1 but only 0 CPUs"):
        plan_binding(_dgx(affinity=_r(4, 12)), 5)  # GPU 4 is on node 1, where no CPU is allowed


def test_uneven_split_gives_the_first_ranks_one_more():
    topo = Topology(nodes={0: _r(0, 10)}, gpus=(), affinity=_r(0, 10))
    assert [b.cpus for b in plan_binding(topo, 3)] == [_r(0, 4), _r(4, 7), _r(7, 10)]


def test_smt_siblings_stay_with_one_rank():
    # 4 cores, 2 hardware threads each, numbered like Linux does: core k = CPUs k and k+4
    siblings = {c: (c % 4, c % 4 + 4) for c in range(8)}
    topo = Topology(nodes={0: _r(0, 8)}, gpus=(), affinity=_r(0, 8), siblings=siblings)
    assert [b.cpus for b in plan_binding(topo, 2)] == [(0, 1, 4, 5), (2, 3, 6, 7)]
    # more ranks than cores: hardware threads are shared out one by one
    assert [b.cpus for b in plan_binding(topo, 8)] == [(0,), (4,), (1,), (5,), (2,), (6,), (3,), (7,)]


def test_cpu_ranks_round_robin_over_nodes():
    topo = Topology(nodes={0: _r(0, 32), 1: _r(32, 64)}, gpus=(), affinity=_r(0, 64))
    plan = plan_binding(topo, 4)
    assert [b.node for b in plan] == [0, 1, 0, 1]
    assert [b.cpus for b in plan] == [_r(0, 16), _r(32, 48), _r(16, 32), _r(48, 64)]
    assert all(b.gpu is None for b in plan)
    only_node1 = Topology(nodes=topo.nodes, gpus=(), affinity=_r(32, 48))  # node 0 not allowed: skipped
    assert [(b.node, b.cpus) for b in plan_binding(only_node1, 2)] == [(1, _r(32, 40)), (1, _r(40, 48))]
    assert [b.gpu for b in plan_binding(_dgx(), 2, use_gpus=False)] == [None, None]  # --device cpu on a GPU box


def test_two_ranks_on_a_two_core_machine():
    topo = Topology(nodes={0: (0, 1)}, gpus=(), affinity=(0, 1))
    plan = plan_binding(topo, 2)
    assert [b.cpus for b in plan] == [(0,), (1,)]
    assert [b.numactl_command for b in plan] == ["numactl --physcpubind=0 --membind=0",
                                                 "numactl --physcpubind=1 --membind=0"]


def test_too_many_ranks_is_a_clear_error():
    topo = Topology(nodes={0: (0, 1)}, gpus=(), affinity=(0, 1))
    with pytest.raises(ResourceError, match=r"3 local ranks \(0, 1, 2\) on NUMA node 0 but only 2 CPUs"):
        plan_binding(topo, 3)
    with pytest.raises(ResourceError, match="9 local ranks but 8 visible GPUs"):
        plan_binding(_dgx(), 9)


def test_unknown_gpu_node_counts_as_node_0():
    plan = plan_binding(_dgx(numa_node_of_gpu0=-1), 1)
    assert plan[0].node == 0 and "unknown: assumed 0" in plan[0].reason


def test_cuda_visible_devices():
    gpus = list(_dgx().gpus[:4])
    seen, _ = visible_gpus(gpus, "2,0")
    assert [(g.index, g.bus_id) for g in seen] == [(0, gpus[2].bus_id), (1, gpus[0].bus_id)]
    seen, _ = visible_gpus(gpus, "0,2,-1,1")  # CUDA stops at the first invalid index
    assert [g.bus_id for g in seen] == [gpus[0].bus_id, gpus[2].bus_id]
    assert visible_gpus(gpus, "")[0] == []
    seen, note = visible_gpus(gpus, "GPU-8932f937")
    assert seen == gpus and "not mapped" in note


# ---- a fake sysfs tree -----------------------------------------------------------------------

def _write(path, text: str) -> None:  # noqa: ANN001
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _fake_sysfs(root, *, nodes: bool = True):  # noqa: ANN001, ANN202
    if nodes:
        _write(root / "sys/devices/system/node/node0/cpulist", "0-3")
        _write(root / "sys/devices/system/node/node1/cpulist", "4-7")
        _write(root / "sys/devices/system/node/node2/cpulist", "")  # memory only (e.g. GPU memory on GH200)
    _write(root / "sys/devices/system/cpu/online", "0-7")
    for c in range(8):
        _write(root / f"sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list", str(c))
    pci = root / "sys/bus/pci/devices"
    devices = {  # bus id: (vendor, class, numa_node, local_cpulist)
        "0000:86:00.0": ("0x10de", "0x030200", "1", "4-7"),   # NVIDIA 3D controller (data centre)
        "0000:3b:00.0": ("0x10de", "0x030200", "0", "0-3"),
        "0000:3b:00.1": ("0x10de", "0x040300", "0", "0-3"),   # its HDMI audio function: not a GPU
        "0000:02:00.0": ("0x1a03", "0x030000", "-1", "0-7"),  # ASPEED BMC VGA: not a GPU we use
    }
    for bus, (vendor, cls, node, cpus) in devices.items():
        _write(pci / bus / "vendor", vendor)
        _write(pci / bus / "class", cls)
        _write(pci / bus / "device", "0x2330")
        _write(pci / bus / "numa_node", node)
        _write(pci / bus / "local_cpulist", cpus)


def test_fake_sysfs(tmp_path):
    _fake_sysfs(tmp_path)
    t = read_topology(tmp_path, env={}, affinity=range(8))
    assert t.nodes == {0: _r(0, 4), 1: _r(4, 8)}
    assert [(g.index, g.bus_id, g.numa_node, g.cpus) for g in t.gpus] == [
        (0, "0000:3b:00.0", 0, _r(0, 4)), (1, "0000:86:00.0", 1, _r(4, 8))]  # PCI bus id order
    assert t.gpus[0].name == "NVIDIA [10de:2330]"  # no NVML for a fake root
    assert t.affinity == _r(0, 8) and t.siblings[3] == (3,)
    assert any("memory only" in n and "2" in n for n in t.notes)
    plan = plan_binding(t, 2)
    assert [(b.gpu, b.node, b.cpus) for b in plan] == [(0, 0, _r(0, 4)), (1, 1, _r(4, 8))]
    assert plan[1].numactl_command == "numactl --cpunodebind=1 --membind=1"


def test_fake_sysfs_cuda_visible_devices(tmp_path):
    _fake_sysfs(tmp_path)
    t = read_topology(tmp_path, env={"CUDA_VISIBLE_DEVICES": "1"}, affinity=range(8))
    assert [(g.index, g.bus_id) for g in t.gpus] == [(0, "0000:86:00.0")]
    assert plan_binding(t, 1)[0].cpus == _r(4, 8)  # cuda:0 of this process is on node 1


def test_no_node_folder_is_one_node(tmp_path):
    _fake_sysfs(tmp_path, nodes=False)
    t = read_topology(tmp_path, env={}, affinity=range(8))
    assert t.nodes == {0: _r(0, 8)} and any("one node 0" in n for n in t.notes)
    empty = read_topology(tmp_path / "nothing", env={}, affinity=(0,))  # no sysfs at all
    assert empty.nodes == {0: _r(0, os.cpu_count() or 1)} and empty.gpus == ()


def test_nvml_names_are_mapped_by_bus_id(tmp_path, monkeypatch):
    _fake_sysfs(tmp_path)
    # NVML's index order need not be the bus order; names are matched by bus id
    devices = [("00000000:86:00.0", b"NVIDIA H100 80GB HBM3"), ("00000000:3B:00.0", "NVIDIA A100-SXM4-80GB")]

    class NVMLError(Exception):
        pass

    fake = types.SimpleNamespace(
        NVMLError=NVMLError, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: len(devices), nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: devices[h][1],
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=devices[h][0].encode()))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    t = read_topology(tmp_path, env={}, nvml=True, affinity=range(8))
    assert [(g.bus_id, g.name) for g in t.gpus] == [("0000:3b:00.0", "NVIDIA A100-SXM4-80GB"),
                                                    ("0000:86:00.0", "NVIDIA H100 80GB HBM3")]


# ---- `trainprof numa` on this machine --------------------------------------------------------

def test_cli_numa_json_shows_this_process_affinity(capsys):
    assert main(["numa", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    mine = sorted(os.sched_getaffinity(0))
    assert d["schema"] == "trainprof.numa/1"
    assert d["affinity"] == {"cpus": mine, "cpulist": format_cpulist(mine)}
    assert d["nproc"] == (len(d["gpus"]) or 1) == len(d["bindings"])
    b = d["bindings"][0]
    assert set(b["cpus"]) <= set(mine) and b["numactl"].startswith("numactl ")
    assert eval(b["python"].removeprefix("os.sched_setaffinity(0, ").removesuffix(")")) == set(b["cpus"])  # noqa: S307


def test_cli_numa_tables(capsys):
    assert main(["numa"]) == 0
    out = capsys.readouterr().out
    mine = sorted(os.sched_getaffinity(0))
    assert f"process affinity: {format_cpulist(mine)} ({len(mine)} CPUs)" in out
    assert "NUMA nodes" in out and "numactl --" in out and "os.sched_setaffinity(0, {" in out
    if not read_topology().gpus:
        assert "no GPUs found (sysfs/NVML)" in out


def test_cli_numa_splits_cpu_ranks(capsys):
    mine = sorted(os.sched_getaffinity(0))
    if len(mine) < 2:
        pytest.skip("needs 2 CPUs")
    assert main(["numa", "--cpu", "--nproc", "2", "--json"]) == 0
    a, b = (set(x["cpus"]) for x in json.loads(capsys.readouterr().out)["bindings"])
    assert a and b and not a & b and a | b <= set(mine)


def test_cli_numa_bad_input_is_one_line(capsys):
    assert main(["numa", "--nproc", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["numa", "--cpu", "--nproc", str(os.cpu_count() + 1)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "each rank needs at least one" in err
