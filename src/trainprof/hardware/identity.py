"""Which device a trace ran on, from what the trace itself shows (docs/trace-analysis.md,
"Device identity").

Evidence, strongest first:
  1. the `deviceProperties` name of the device the kernels ran on (a spec-table row);
  2. its architecture: NVIDIA compute capability (computeMajor/Minor → sm_XY), AMD
     `gcnArchName` or HIP's major/minor (9.4 → gfx942);
  3. architecture tags in kernel names. AMD code objects are built per ISA, so a `gfx942`
     tag is that ISA. NVIDIA kernels tagged sm90/sm100/sm120/sm121 use arch-specific MMA
     (wgmma, tcgen05) that runs only on that architecture family, so they name it; older
     tags (`sm80_xmma`, `cutlass_80_tensorop`, `ampere_`, `turing_`, `volta_`) run on that
     architecture *and every newer one* (cuBLAS runs sm80 kernels on an H100): a lower
     bound only.
Whether the trace is a GPU trace at all comes from its events (GPU activity, CUDA/HIP
runtime calls, deviceProperties), never from the name field: a GPU trace with a blank name
is still a GPU trace, and must never be judged against the CPU that runs the analysis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from trainprof.hardware.specs import ArchInfo, DeviceSpec, SpecTable, load_specs, unmatched_device_message

# sm90_xmma_gemm_..., cutlass3x_sm90_tensorop..., bmm_..._sm100f, sm_121a; not inside a word.
_SM_TAG = re.compile(r"(?<![a-z0-9])sm_?(\d{2,3})([af]?)(?![0-9])", re.IGNORECASE)
# cutlass_80_tensorop_s1688gemm (CUTLASS 2 names carry the arch as a bare number)
_CUTLASS_TAG = re.compile(r"cutlass_(\d{2,3})_", re.IGNORECASE)
# cuBLAS/cuDNN kernel families named after the oldest architecture they run on
_FAMILY_TAG = {"maxwell": 50, "volta": 70, "turing": 75, "ampere": 80, "hopper": 90}
_FAMILY_RE = re.compile(r"(?<![a-z0-9])(maxwell|volta|turing|ampere|hopper)_", re.IGNORECASE)
_GFX_TAG = re.compile(r"(?<![a-z0-9])gfx(\d{3,4}[a-z]?)(?![0-9a-z])", re.IGNORECASE)
EXACT_FROM = 90  # sm tags from here on are arch-specific (wgmma, tcgen05): they name the architecture
# HIP reports the ISA's digits as major.minor; 9.0 is gfx906, gfx908 or gfx90a (ambiguous)
_HIP_CC = {(9, 4): "gfx942", (9, 5): "gfx950", (11, 0): "gfx1100"}
_HIP_AMBIGUOUS = {(9, 0): ("gfx906", "gfx908", "gfx90a")}  # Vega 20, CDNA1, CDNA2: different peaks and bf16
_AMD_NAME = re.compile(r"\b(AMD|Radeon|Instinct)\b", re.IGNORECASE)
_NVIDIA_NAME = re.compile(r"\b(NVIDIA|Tesla|GeForce|Quadro|TITAN)\b", re.IGNORECASE)


@dataclass(frozen=True)
class DeviceFacts:
    """What the trace shows about its device (trace/device.py gathers them)."""

    gpu_activity: bool  # kernels, GPU memcpy/memset
    gpu_calls: bool = False  # CUDA/HIP runtime or driver calls (a GPU machine even without GPU activity)
    name: str | None = None  # deviceProperties name of the device the work ran on
    compute: tuple[int, int] | None = None  # deviceProperties computeMajor/Minor
    gcn_arch: str | None = None  # deviceProperties gcnArchName (ROCm), "gfx942:sramecc+:xnack-"
    vendor_hint: str | None = None  # "nvidia"/"amd" from runtime names or version fields
    kernel_names: tuple[str, ...] = ()  # distinct kernel names


@dataclass(frozen=True)
class DeviceIdentity:
    gpu: bool  # the trace ran on a GPU: GPU activity, or CUDA/HIP runtime/driver calls
    gpu_activity: bool = False  # the trace holds GPU work (what `has_gpu` means everywhere)
    name: str | None = None
    vendor: str | None = None  # "nvidia" | "amd"
    arch: str | None = None  # known exactly: "sm_75", "gfx942"
    min_arch: str | None = None  # only a lower bound is known (sm80 kernels run on sm_80 and newer)
    arch_options: tuple[str, ...] = ()  # one of these, not known which (HIP 9.0: gfx906/908/90a)
    basis: str = ""  # how the architecture was found, in words
    spec: DeviceSpec | None = None  # the row the name matches, or the row the arch assumes
    assumed: bool = False  # `spec` comes from the architecture, not the name

    @property
    def info(self) -> ArchInfo | None:
        return load_specs().archs.get(self.arch or self.min_arch or "")

    @property
    def family(self) -> str | None:
        i = self.info
        if i is None:
            return None
        return i.family if self.arch else f"{i.family} or newer"

    def _flag(self, name: str) -> bool | None:
        """A capability: exact for a known arch; for a lower bound only a `True` holds (newer
        architectures keep it, except AMD's CDNA1 → CDNA2 gain of bf16, which stays unknown)."""
        i = self.info
        if i is None:
            return None
        v = getattr(i, name)
        return v if self.arch else (True if v else None)

    @property
    def bf16(self) -> bool | None:
        return self._flag("bf16")

    @property
    def tensor_cores(self) -> bool | None:
        return self._flag("tensor_cores")

    @property
    def tf32(self) -> bool | None:
        return self._flag("tf32")

    def label(self) -> str:
        """The header's device line: the name, or what is known of an unnamed GPU."""
        if not self.gpu_activity:
            return ("no GPU activity recorded (the trace has GPU runtime calls: profile with "
                    "ProfilerActivity.CUDA to see the device)" if self.gpu else "no GPU activity (CPU-only trace)")
        arch = self.arch or (f"≥ {self.min_arch}" if self.min_arch else "/".join(self.arch_options) or None)
        what = ", ".join(x for x in (self.family, arch) if x)
        if self.name:
            return f"{self.name} ({what})" if what else self.name
        vendor = {"nvidia": "NVIDIA", "amd": "AMD"}.get(self.vendor or "", "")
        known = " ".join(x for x in (vendor, what) if x)
        whence = f", from {self.basis}" if self.basis and what else ""
        return f"GPU not named in the trace ({known}{whence})" if known else "GPU not named in the trace"

    def record(self) -> dict:
        """The `device` block of analysis.json."""
        return {"label": self.label(), "gpu": self.gpu, "name": self.name, "vendor": self.vendor,
                "arch": self.arch, "min_arch": self.min_arch, "family": self.family, "basis": self.basis or None,
                "bf16": self.bf16, "tensor_cores": self.tensor_cores, "tf32": self.tf32,
                "spec_key": self.spec.key if self.spec else None, "spec_assumed": self.assumed}


def identify(facts: DeviceFacts, table: SpecTable | None = None) -> DeviceIdentity:
    """The device's identity from the trace's facts (pure)."""
    table = table or load_specs()
    # deviceProperties alone is no GPU trace: Kineto lists the node's GPUs for a CPU-only
    # profile too (`run --device cpu --profile` on a GPU box), whose roofs are this CPU's
    gpu = facts.gpu_activity or facts.gpu_calls
    if not gpu:
        return DeviceIdentity(gpu=False)
    vendor = _vendor(facts)
    spec = table.match(facts.name) if facts.name else None
    arch, min_arch, basis = None, None, ""
    if spec is not None and spec.arch:
        arch, basis, vendor = spec.arch, "the device name", spec.vendor or vendor
    elif facts.gcn_arch:
        arch, basis, vendor = facts.gcn_arch.split(":")[0].lower(), f"gcnArchName {facts.gcn_arch.split(':')[0]}", "amd"
    elif facts.compute and vendor == "nvidia":
        major, minor = facts.compute
        arch, basis = f"sm_{major}{minor}", f"compute capability {major}.{minor}"
    elif facts.compute and vendor == "amd" and tuple(facts.compute) in _HIP_CC:
        arch = _HIP_CC[tuple(facts.compute)]
        basis = f"HIP compute capability {facts.compute[0]}.{facts.compute[1]}"
    options: tuple[str, ...] = ()
    if arch is None and facts.compute and vendor == "amd":
        options = _HIP_AMBIGUOUS.get(tuple(facts.compute), ())
        basis = f"HIP compute capability {facts.compute[0]}.{facts.compute[1]}" if options else basis
    if arch is None:
        tag_vendor, arch, min_arch, tag_basis = kernel_arch(facts.kernel_names)
        vendor, basis = vendor or tag_vendor, tag_basis or basis
    assumed = False
    if spec is None and arch and not facts.name:
        info = table.archs.get(arch)
        if info is not None and info.assume:
            spec, assumed = table.get(info.assume), True
    return DeviceIdentity(gpu=True, gpu_activity=facts.gpu_activity, name=facts.name, vendor=vendor, arch=arch,
                          min_arch=min_arch, arch_options=options if arch is None else (), basis=basis, spec=spec,
                          assumed=assumed)


def kernel_arch(names: Iterable[str]) -> tuple[str | None, str | None, str | None, str]:
    """(vendor, exact arch, lower bound, basis) from architecture tags in kernel names."""
    exact: dict[str, str] = {}  # arch -> the tag that shows it
    bound: dict[int, str] = {}
    for n in names:
        for m in _GFX_TAG.finditer(n):
            exact.setdefault("gfx" + m.group(1).lower(), m.group(0))
        for m in _SM_TAG.finditer(n):
            cc = int(m.group(1))
            if cc >= EXACT_FROM:
                exact.setdefault(f"sm_{cc}", m.group(0))
            else:
                bound.setdefault(cc, m.group(0))
        for m in _CUTLASS_TAG.finditer(n):
            bound.setdefault(int(m.group(1)), m.group(0).rstrip("_"))
        for m in _FAMILY_RE.finditer(n):
            bound.setdefault(_FAMILY_TAG[m.group(1).lower()], m.group(0))
    if exact:
        # one device runs one architecture; two exact tags (never seen) keep the newest
        arch = max(exact, key=_arch_order)
        return ("amd" if arch.startswith("gfx") else "nvidia"), arch, None, f"the kernel-name tag {exact[arch]}"
    if bound:
        cc = max(bound)
        return "nvidia", None, f"sm_{cc}", f"the kernel-name tag {bound[cc]}"
    return None, None, None, ""


def _arch_order(arch: str) -> int:
    digits = re.sub(r"\D", "", arch)
    return int(digits) if digits else 0


def _vendor(facts: DeviceFacts) -> str | None:
    if facts.gcn_arch:
        return "amd"
    if facts.name:
        if _AMD_NAME.search(facts.name):
            return "amd"
        if _NVIDIA_NAME.search(facts.name):
            return "nvidia"
    return facts.vendor_hint


def peak_hint(ident: DeviceIdentity, table: SpecTable | None = None) -> str:
    """Why a GPU has no peak (no name, or a name no row matches), and which --gpu-spec keys
    to try: the rows of its architecture where it is known, else the rows nearest the name."""
    table = table or load_specs()
    arch = ident.arch or ident.min_arch
    rows = [k for a in ((arch,) if arch else ident.arch_options) for k in table.rows_of(a)]
    info = ident.info
    if ident.name:
        hits = table.candidates(ident.name)
        if len(hits) > 1:
            return unmatched_device_message(ident.name)  # ambiguous name: its rows
        if not arch and not ident.arch_options:  # nothing better than the name's spelling
            rows = table.closest(ident.name)
    if ident.arch:
        what = f"{info.family} {ident.arch}" if info else ident.arch
        if info and info.products and not ident.name:
            what += f": {info.products}"
    elif ident.min_arch:
        major, minor = ident.min_arch[3:-1], ident.min_arch[-1]
        what = f"NVIDIA compute capability ≥ {major}.{minor}"
    elif ident.arch_options:
        what = f"{' or '.join(ident.arch_options)}"
    else:
        what = "its architecture is not recorded either" if not ident.name else ""
    whence = f", from {ident.basis}" if ident.basis and what and ident.basis != "the device name" else ""
    head = (f"device {ident.name!r} is not in the spec table" if ident.name else "GPU not named in the trace") \
        + (f" ({what}{whence})" if what else "")
    if rows and ident.min_arch and not ident.arch:
        keys = f"--gpu-spec KEY ({ident.min_arch} rows: {', '.join(rows)}; a newer GPU: see `trainprof specs`), or "
    elif rows:
        keys = f"--gpu-spec {' or '.join(rows)} if it is one of those, or "
    else:
        keys = "--gpu-spec KEY (see `trainprof specs`), or "
    return f"{head}: no MFU or roofline bound against a guessed peak; pass {keys}--peak-tflops and --peak-bandwidth-gbs"
