"""One frozen dataclass per benchmark; `None`/empty fields take the device's defaults.

`resolved(kind)` fills them for a device kind ("cpu" or "cuda") and validates; errors
name the field and its flag (`bench.matmul.iters (--iters) must be > 0`). The CPU
defaults keep every benchmark to seconds on 2 cores; the GPU defaults are mamf-finder /
nccl-tests sized.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from trainprof.errors import UsageError

MATMUL_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
MATMUL_OPS = ("mm", "linear")
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter")
COLLECTIVE_DTYPES = ("fp32", "bf16", "fp16")


# field → CLI flag where they differ (error messages name the flag a user typed).
_FLAGS = {"shapes": "--sizes", "dtypes": "--dtype", "ops": "--op", "timeout_s": "--timeout",
          "pin_memory": "--pin-memory"}


def _flag(name: str) -> str:
    return _FLAGS.get(name) or "--" + name.replace("_", "-")


class _Config:
    """Shared helpers: validation messages and a JSON-ready dict."""

    section = ""

    def _fail(self, name: str, what: str) -> None:
        raise UsageError(f"bench.{self.section}.{name} ({_flag(name)}) {what}")

    def _positive(self, *names: str) -> None:
        for n in names:
            v = getattr(self, n)
            if v is not None and not v > 0:
                self._fail(n, f"must be > 0, got {v}")

    def _non_negative(self, *names: str) -> None:
        for n in names:
            v = getattr(self, n)
            if v is not None and v < 0:
                self._fail(n, f"must be ≥ 0, got {v}")

    def _fill(self, defaults: dict[str, Any]) -> Any:
        """A copy with every None/empty field replaced by `defaults`."""
        return replace(self, **{f.name: defaults[f.name] for f in fields(self)  # type: ignore[arg-type]
                                if f.name in defaults and getattr(self, f.name) in (None, ())})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class MatmulConfig(_Config):
    section = "matmul"
    shapes: tuple[tuple[int, int, int], ...] = ()
    """(M, N, K) per GEMM, C[M,N] = A[M,K]·B[K,N]; empty: the device's default sweep"""
    dtypes: tuple[str, ...] = ()
    """fp32, tf32, bf16, fp16, fp8; empty: CPU fp32,bf16 — GPU fp32,tf32,bf16,fp16 (+fp8 if it runs)"""
    ops: tuple[str, ...] = ()
    """mm (torch.mm) and/or linear (F.linear); empty: mm on GPU, both on CPU"""
    warmup: int | None = None
    """untimed calls per case before timing (clocks, caches, kernel choice)"""
    iters: int | None = None
    """most timed calls per case"""
    budget_s: float | None = None
    """stop timing a case after this many seconds (at least 3 calls are always timed)"""
    record: bool = True
    """on CPU: store the best fp32/bf16 TFLOP/s as the measured peak used by MFU/roofline"""

    def resolved(self, kind: str, fp8: bool = False) -> "MatmulConfig":
        gpu = kind == "cuda"
        c = self._fill({
            # H100 SXM's best bf16 shape in ml-engineering's MAMF table is 6144x17920x2816.
            "shapes": ((2048,) * 3, (4096,) * 3, (8192,) * 3, (16384,) * 3, (6144, 17920, 2816))
            if gpu else ((256,) * 3, (512,) * 3, (1024,) * 3, (2048,) * 3),
            "dtypes": ("fp32", "tf32", "bf16", "fp16") + (("fp8",) if fp8 else ()) if gpu
            else ("fp32", "bf16"),
            "ops": ("mm",) if gpu else MATMUL_OPS,
            "warmup": 20 if gpu else 1,
            "iters": 50 if gpu else 10,
            "budget_s": 2.0 if gpu else 0.5,
        })
        c._non_negative("warmup")
        c._positive("iters", "budget_s")
        for d in c.dtypes:
            if d not in MATMUL_DTYPES:
                c._fail("dtypes", f"{d!r}: expected one of {','.join(MATMUL_DTYPES)}")
        if not gpu and "tf32" in c.dtypes:
            c._fail("dtypes", "tf32 is a GPU tensor-core mode; on CPU use fp32, bf16 or fp16")
        if "fp8" in c.dtypes and not fp8:
            c._fail("dtypes", "fp8: this device/torch cannot run torch._scaled_mm "
                    "(needs an H100/Ada-class GPU or newer)")
        if "fp8" in c.dtypes and any(d % 16 for s in c.shapes for d in s):
            c._fail("shapes", "fp8 GEMMs need every dimension to be a multiple of 16")
        return c


@dataclass(frozen=True)
class BandwidthConfig(_Config):
    section = "bandwidth"
    sizes: tuple[int, ...] = ()
    """bytes per buffer; empty: CPU 1M,16M,256M — GPU 64M,256M,1G"""
    warmup: int | None = None
    """untimed copies per case (first touch, page faults)"""
    iters: int | None = None
    """timed copies per case"""
    record: bool = True
    """on CPU: store the copy bandwidth of buffers ≥ 64 MiB as the measured roofline bandwidth"""

    def resolved(self, kind: str) -> "BandwidthConfig":
        gpu = kind == "cuda"
        c = self._fill({
            "sizes": (64 * 2**20, 256 * 2**20, 2**30) if gpu else (2**20, 16 * 2**20, 256 * 2**20),
            "warmup": 3 if gpu else 2,
            "iters": 20 if gpu else 10,
        })
        c._non_negative("warmup")
        c._positive("iters")
        return c


@dataclass(frozen=True)
class CollectiveConfig(_Config):
    section = "allreduce"
    nproc: int = 2
    """ranks (processes); collectives need at least 2"""
    ops: tuple[str, ...] = ("all_reduce",)
    """all_reduce, all_gather, reduce_scatter"""
    sizes: tuple[int, ...] = ()
    """message bytes S (nccl-tests' S: the whole array); empty: CPU 4K..16M — GPU 1M..1G"""
    dtype: str = "fp32"
    """element type of the messages"""
    warmup: int | None = None
    """untimed collectives per size"""
    iters: int | None = None
    """timed collectives per size (the reported time is their mean)"""
    master_addr: str = "127.0.0.1"
    """rendezvous address (rank 0's TCP store); this machine"""
    master_port: int = 0
    """rendezvous port; 0: a free one"""
    timeout_s: float = 120.0
    """the whole job's limit; a rank that dies ends the job at once"""

    def resolved(self, kind: str) -> "CollectiveConfig":
        gpu = kind == "cuda"
        c = self._fill({
            "sizes": (2**20, 16 * 2**20, 128 * 2**20, 2**30) if gpu
            else (4 * 2**10, 64 * 2**10, 2**20, 16 * 2**20),
            "warmup": 5,
            "iters": 20,
        })
        if c.nproc < 2:
            raise UsageError(f"--nproc {c.nproc}: collectives need ≥ 2 ranks "
                             "(a single rank has nobody to exchange data with)")
        c._non_negative("warmup")
        c._positive("iters", "timeout_s")
        for op in c.ops:
            if op not in COLLECTIVE_OPS:
                c._fail("ops", f"{op!r}: expected one of {','.join(COLLECTIVE_OPS)}")
        if c.dtype not in COLLECTIVE_DTYPES:
            c._fail("dtype", f"{c.dtype!r}: expected one of {','.join(COLLECTIVE_DTYPES)}")
        if not 0 <= c.master_port < 65536:
            c._fail("master_port", f"must be in 0..65535, got {c.master_port}")
        return c


@dataclass(frozen=True)
class DataloaderConfig(_Config):
    section = "dataloader"
    workers: tuple[int, ...] = (0, 1, 2)
    """DataLoader num_workers values to try"""
    pin_memory: tuple[bool, ...] = ()
    """pin_memory values to try; empty: off on CPU, off and on with a GPU"""
    batches: int = 40
    """batches per configuration (the first, which starts the workers, is timed apart)"""
    micro_batch: int = 16
    """sequences per batch (the tiny preset's)"""
    seq_len: int = 256
    """tokens per sequence (the tiny preset's)"""
    data: str | None = None
    """text file or folder (default: this Python's stdlib sources, as `trainprof run`)"""

    def resolved(self, kind: str) -> "DataloaderConfig":
        c = self._fill({"pin_memory": (False, True) if kind == "cuda" else (False,)})
        if kind != "cuda" and True in c.pin_memory:
            c._fail("pin_memory", "on: pinned memory only speeds up copies to a GPU; "
                    "there is none on this device")
        c._positive("micro_batch", "seq_len")
        if c.batches < 2:
            c._fail("batches", f"must be ≥ 2 (the first batch is timed apart), got {c.batches}")
        if any(w < 0 for w in c.workers):
            c._fail("workers", f"must be ≥ 0, got {c.workers}")
        return c


@dataclass(frozen=True)
class ShapesConfig(_Config):
    section = "shapes"
    hidden: int = 768
    """model width h (GPT-2 small: 768)"""
    vocab: int = 50257
    """vocabulary size to pad (GPT-2: 50257)"""
    tokens: int | None = None
    """GEMM rows M = batch · sequence; empty: CPU 256 — GPU 8192"""
    seq_len: int | None = None
    """sequence length T of the attention-score GEMMs; empty: CPU 256 — GPU 2048"""
    dtype: str | None = None
    """fp32, tf32, bf16, fp16; empty: CPU fp32 — GPU bf16"""
    ff_steps: int = 3
    """d_ff candidates: multiples of 64 up to this many steps either side of 8/3·h"""
    warmup: int | None = None
    """untimed calls per candidate"""
    iters: int | None = None
    """most timed calls per candidate"""
    budget_s: float | None = None
    """stop timing a candidate after this many seconds (at least 3 calls)"""

    def resolved(self, kind: str) -> "ShapesConfig":
        gpu = kind == "cuda"
        c = self._fill({
            "tokens": 8192 if gpu else 256,
            "seq_len": 2048 if gpu else 256,
            "dtype": "bf16" if gpu else "fp32",
            "warmup": 10 if gpu else 1,
            "iters": 30 if gpu else 5,
            "budget_s": 1.0 if gpu else 0.3,
        })
        c._positive("hidden", "vocab", "tokens", "seq_len", "iters", "budget_s")
        c._non_negative("warmup", "ff_steps")
        if c.dtype not in ("fp32", "tf32", "bf16", "fp16"):
            c._fail("dtype", f"{c.dtype!r}: expected fp32, tf32, bf16 or fp16")
        if c.dtype == "tf32" and not gpu:
            c._fail("dtype", "tf32 is a GPU tensor-core mode; on CPU use fp32, bf16 or fp16")
        if c.tokens % c.seq_len:
            c._fail("tokens", f"{c.tokens} must be a multiple of --seq-len {c.seq_len}")
        return c
