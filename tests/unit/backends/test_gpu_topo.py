"""`nvidia-smi topo -m` parsed into the link between the GPUs (backends/gpu_topo.py), on two
scripted outputs (tests/data/nvidia_smi/): an 8×H100 HGX box (every pair NV18, the NICs on PXB,
NODE and SYS paths that must not count as GPU pairs; headers underlined as on a terminal) and a
4-GPU PCIe box (pairs on one switch, PIX; across the sockets, SYS)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from trainprof.backends import gpu_topo

DATA = Path(__file__).parents[2] / "data" / "nvidia_smi"


def _topo(name: str) -> gpu_topo.GpuTopology:
    return gpu_topo.summarise(gpu_topo.parse((DATA / name).read_text()))


def test_an_hgx_h100_box_is_nvlink_4_and_the_nics_are_not_gpus():
    pairs = gpu_topo.parse((DATA / "topo_h100_nv18.txt").read_text())
    assert len(pairs) == 8 * 7 and set(pairs.values()) == {"NV18"}  # 56 ordered GPU pairs, no NIC column
    t = _topo("topo_h100_nv18.txt")
    assert (t.gpus, t.kind, t.nvlinks, t.worst) == (8, "nvlink", 18, "NV18")
    lk, why = gpu_topo.choose_link(t, "h100-sxm")
    assert lk.key == "nvlink4" and lk.gbs == 450.0 and "NV18 between 8 GPUs" in why  # 18 links × 25 GB/s
    # a device whose row says PCIe under an NVLink matrix (bridged cards): no link, never a guess
    assert gpu_topo.choose_link(t, "h100-pcie")[0] is None
    assert gpu_topo.choose_link(t, None)[0] is None


def test_a_pcie_box_takes_its_slowest_pair():
    pairs = gpu_topo.parse((DATA / "topo_pcie_4gpu.txt").read_text())
    assert pairs[(0, 1)] == "PIX" and pairs[(0, 2)] == "SYS" and len(pairs) == 12
    t = _topo("topo_pcie_4gpu.txt")
    assert (t.gpus, t.kind, t.worst) == (4, "pcie", "SYS")
    lk, why = gpu_topo.choose_link(t, "a100-pcie-80gb")
    assert lk.key == "pcie4" and lk.gbs == 31.5 and "cross the CPU sockets" in why
    assert gpu_topo.choose_link(t, "h100-sxm")[0] is None  # an SXM row over PCIe paths: disagree


def test_no_nvidia_smi_is_no_link():
    def missing(*a, **k):
        raise FileNotFoundError("nvidia-smi")

    def failing(*a, **k):
        return subprocess.CompletedProcess(a, 9, "", "NVIDIA-SMI has failed")

    def scripted(*a, **k):
        return subprocess.CompletedProcess(a, 0, (DATA / "topo_h100_nv18.txt").read_text(), "")

    assert gpu_topo.machine_link("h100-sxm", run=missing)[0] is None
    assert gpu_topo.machine_link("h100-sxm", run=failing)[0] is None
    assert gpu_topo.machine_link("h100-sxm", run=scripted)[0].key == "nvlink4"
    assert gpu_topo.parse("No devices were found") == {}
