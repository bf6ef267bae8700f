"""One frozen dataclass per benchmark, and `BenchOptions` for what every one takes; the
fields are `trainprof bench KIND`'s flags (trainprof/flags.py: the type and its choices, the
docstring as the help, a list parsed from `--sizes 4K,1M`).

`None`/empty fields take the device's defaults, declared once in each class's `DEFAULTS`:
`resolved(kind)` fills them for a device kind ("cpu" or "cuda") and checks what depends on
the device; --help prints them from the same table (`CPU 1, GPU 20`). The CPU defaults keep
every benchmark to seconds on 2 cores; the GPU defaults are mamf-finder / nccl-tests sized.
Errors name the field and its flag (`bench.matmul.iters (--iters) must be > 0, got 0`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar, Literal

from trainprof.bench.parse import human_bytes, parse_choices, parse_ints, parse_shapes, parse_sizes
from trainprof.errors import ConfigError
from trainprof.flags import META, leaves, option, section, show_value
from trainprof.options import OutputOptions
from trainprof.workload.config import PRESET_DEFAULTS, PRESETS
from trainprof.vocab import collectives as cv

MATMUL_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
MATMUL_OPS = ("mm", "linear")
COLLECTIVE_OPS = (cv.ALL_REDUCE, cv.ALL_GATHER, cv.REDUCE_SCATTER)  # what `bench allreduce --op` runs
COLLECTIVE_DTYPES = ("fp32", "bf16", "fp16")
PIN_MEMORY = {"off": (False,), "on": (True,), "both": (False, True)}


def _lower(text: str, flag: str) -> str:
    return text.lower()


def _matmul_dtypes(text: str, flag: str) -> tuple[str, ...]:
    return parse_choices(text, flag, MATMUL_DTYPES)


def _matmul_ops(text: str, flag: str) -> tuple[str, ...]:
    return parse_choices(text, flag, MATMUL_OPS)


def _collective_ops(text: str, flag: str) -> tuple[str, ...]:
    return parse_choices(text, flag, COLLECTIVE_OPS)


def _pin(text: str, flag: str) -> tuple[bool, ...]:
    if text not in PIN_MEMORY:
        from trainprof.errors import UsageError

        raise UsageError(f"{flag} {text!r}: expected one of {', '.join(PIN_MEMORY)}")
    return PIN_MEMORY[text]


def _show_shapes(shapes: tuple[tuple[int, int, int], ...]) -> str:
    return ",".join(str(s[0]) if s[0] == s[1] == s[2] else "x".join(map(str, s)) for s in shapes)


def _show_sizes(sizes: tuple[int, ...]) -> str:
    return ",".join(human_bytes(n) for n in sizes)


def _show_pin(pins: tuple[bool, ...]) -> str:
    return next(k for k, v in PIN_MEMORY.items() if v == tuple(pins))


def _show_list(values: tuple[Any, ...]) -> str:
    return ",".join(map(str, values))


@dataclass(frozen=True)
class BenchOptions:
    """What every benchmark takes: the device, and where bench.json goes."""

    PATH: ClassVar[str] = "bench"

    device: str = "auto"
    """auto, cpu, cuda or cuda:N"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "force", "json"), helps={
        "out": "folder for bench.json (default runs/bench-KIND-<timestamp>)",
        "json": "print bench.json instead of the table"})
    """where bench.json goes"""


class _Config:
    """Shared helpers: the device defaults, validation messages and a JSON-ready dict."""

    PATH: ClassVar[str] = ""
    DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {"cpu": {}, "cuda": {}}

    def _fail(self, name: str, what: str) -> None:
        flags = {leaf.path: leaf.flag for leaf in leaves(type(self))}  # named by its flag, as on a command line
        raise ConfigError(name, what, owner=self.PATH, flags=flags)

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

    def _fill(self, kind: str, **extra: Any) -> Any:
        """A copy with every None/empty field replaced by the device kind's default."""
        defaults = {**self.DEFAULTS["cuda" if kind == "cuda" else "cpu"], **extra}
        return replace(self, **{f.name: defaults[f.name] for f in fields(self)  # type: ignore[arg-type]
                                if f.name in defaults and getattr(self, f.name) in (None, ())})

    @classmethod
    def flag_default_text(cls, name: str) -> str | None:
        """--help's default of a field that depends on the device: `CPU 1, GPU 20`, from DEFAULTS."""
        cpu, gpu = cls.DEFAULTS["cpu"].get(name), cls.DEFAULTS["cuda"].get(name)
        if cpu is None and gpu is None:
            return None
        show = next(f.metadata.get(META, {}).get("show") for f in fields(cls) if f.name == name) or show_value
        if cpu == gpu:
            return show(cpu)
        return f"CPU {show(cpu)}; GPU {show(gpu)}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class MatmulConfig(_Config):
    PATH: ClassVar[str] = "bench.matmul"
    FLAG_BOOLS: ClassVar[str] = "both"  # --record/--no-record
    DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {
        "cpu": {"shapes": ((256,) * 3, (512,) * 3, (1024,) * 3, (2048,) * 3), "dtypes": ("fp32", "bf16"),
                "ops": MATMUL_OPS, "warmup": 1, "iters": 10, "budget_s": 0.5},
        # H100 SXM's best bf16 shape in ml-engineering's MAMF table is 6144x17920x2816; fp8 is
        # added where the device runs it (resolved(fp8=True))
        "cuda": {"shapes": ((2048,) * 3, (4096,) * 3, (8192,) * 3, (16384,) * 3, (6144, 17920, 2816)),
                 "dtypes": ("fp32", "tf32", "bf16", "fp16"), "ops": ("mm",), "warmup": 20, "iters": 50,
                 "budget_s": 2.0},
    }

    shapes: tuple[tuple[int, int, int], ...] = option((), flag="--sizes", parse=parse_shapes, show=_show_shapes,
                                                      metavar="N|MxNxK,...")
    """GEMM shapes C[M,N] = A[M,K]·B[K,N]: N (square) or MxNxK, comma-separated"""
    dtypes: tuple[str, ...] = option((), flag="--dtype", parse=_matmul_dtypes, show=_show_list,
                                     metavar=",".join(MATMUL_DTYPES))
    """dtypes, comma-separated (GPU: fp8 too where it runs)"""
    ops: tuple[str, ...] = option((), flag="--op", parse=_matmul_ops, show=_show_list, metavar="mm,linear")
    """torch.mm and/or F.linear, comma-separated"""
    warmup: int | None = None
    """untimed calls per case before timing (clocks, caches, kernel choice)"""
    iters: int | None = None
    """most timed calls per case"""
    budget_s: float | None = None
    """stop timing a case after this many seconds (at least 3 calls are always timed)"""
    record: bool = True
    """on CPU: store the best fp32/bf16 TFLOP/s as the measured peak used by MFU/roofline"""

    def __post_init__(self) -> None:
        self._non_negative("warmup")
        self._positive("iters", "budget_s")
        for d in self.dtypes:
            if d not in MATMUL_DTYPES:
                self._fail("dtypes", f"{d!r}: expected one of {','.join(MATMUL_DTYPES)}")

    def resolved(self, kind: str, fp8: bool = False) -> "MatmulConfig":
        gpu = kind == "cuda"
        c = self._fill(kind, **({"dtypes": self.DEFAULTS["cuda"]["dtypes"] + ("fp8",)} if gpu and fp8 else {}))
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
    PATH: ClassVar[str] = "bench.bandwidth"
    FLAG_BOOLS: ClassVar[str] = "both"  # --record/--no-record
    DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {
        "cpu": {"sizes": (2**20, 16 * 2**20, 256 * 2**20), "warmup": 2, "iters": 10},
        "cuda": {"sizes": (64 * 2**20, 256 * 2**20, 2**30), "warmup": 3, "iters": 20},
    }

    sizes: tuple[int, ...] = option((), parse=parse_sizes, show=_show_sizes, metavar="1M,16M,...")
    """bytes per buffer, comma-separated (K, M, G: powers of 1024)"""
    warmup: int | None = None
    """untimed copies per case (first touch, page faults)"""
    iters: int | None = None
    """timed copies per case"""
    record: bool = True
    """on CPU: store the copy bandwidth of buffers ≥ 64 MiB as the measured roofline bandwidth"""

    def __post_init__(self) -> None:
        self._non_negative("warmup")
        self._positive("iters")

    def resolved(self, kind: str) -> "BandwidthConfig":
        return self._fill(kind)


@dataclass(frozen=True)
class CollectiveConfig(_Config):
    PATH: ClassVar[str] = "bench.allreduce"
    DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {
        "cpu": {"sizes": (4 * 2**10, 64 * 2**10, 2**20, 16 * 2**20), "warmup": 5, "iters": 20},
        "cuda": {"sizes": (2**20, 16 * 2**20, 128 * 2**20, 2**30), "warmup": 5, "iters": 20},
    }

    nproc: int = 2
    """ranks on this machine, ≥ 2: runs torchrun --standalone --nproc-per-node N -m trainprof bench allreduce ...
    (on GPUs one GPU each; under your own torchrun: its world size)"""
    ops: tuple[str, ...] = option((cv.ALL_REDUCE,), flag="--op", parse=_collective_ops, show=_show_list,
                                  metavar=",".join(COLLECTIVE_OPS))
    """collectives, comma-separated"""
    sizes: tuple[int, ...] = option((), parse=parse_sizes, show=_show_sizes, metavar="4K,1M,...")
    """message bytes S (nccl-tests' S: the whole array), comma-separated"""
    dtype: Literal["fp32", "bf16", "fp16"] = option("fp32", parse=_lower)
    """element type of the messages"""
    warmup: int | None = None
    """untimed collectives per size"""
    iters: int | None = None
    """timed collectives per size (the reported time is their mean)"""
    master_addr: str = option("127.0.0.1", metavar="A")
    """rendezvous address of this machine for --nproc"""
    master_port: int = option(0, metavar="P")
    """rendezvous port for --nproc: torchrun --rdzv-endpoint ADDR:PORT (0: --standalone, a free one)"""
    timeout_s: float = option(120.0, flag="--timeout", metavar="S")
    """seconds before the whole job is stopped (with --nproc), and the process group's timeout"""
    link: str | None = option(None, metavar="nvlink4|pcie5|ndr|...")
    """the link the ranks talk over (hardware/references.toml): each size's busbw is then shown as a
    share of its per-direction bandwidth; unset: no share (the link is never guessed)"""

    def __post_init__(self) -> None:
        if self.link is not None:
            from trainprof.hardware.references import link

            try:
                link(self.link)
            except ValueError as e:
                self._fail("link", str(e))
        if self.nproc < 2:
            self._fail("nproc", f"must be ≥ 2: collectives need ≥ 2 ranks (one has nobody to exchange data with), "
                       f"got {self.nproc}")
        self._non_negative("warmup")
        self._positive("iters", "timeout_s")
        for op in self.ops:
            if op not in COLLECTIVE_OPS:
                self._fail("ops", f"{op!r}: expected one of {','.join(COLLECTIVE_OPS)}")
        if self.dtype not in COLLECTIVE_DTYPES:
            self._fail("dtype", f"{self.dtype!r}: expected one of {','.join(COLLECTIVE_DTYPES)}")
        if not 0 <= self.master_port < 65536:
            self._fail("master_port", f"must be in 0..65535, got {self.master_port}")

    def resolved(self, kind: str) -> "CollectiveConfig":
        return self._fill(kind)


@dataclass(frozen=True)
class DataloaderConfig(_Config):
    PATH: ClassVar[str] = "bench.dataloader"
    DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {"cpu": {"pin_memory": (False,)},
                                                      "cuda": {"pin_memory": (False, True)}}

    workers: tuple[int, ...] = option((0, 1, 2), parse=parse_ints, show=_show_list, metavar="0,1,2")
    """DataLoader num_workers values to try, comma-separated"""
    pin_memory: tuple[bool, ...] = option((), parse=_pin, show=_show_pin, metavar="{off,on,both}")
    """pin_memory values to try"""
    batches: int = 40
    """batches per configuration (the first, which starts the workers, is timed apart)"""
    micro_batch: int = PRESET_DEFAULTS["tiny"]["micro_batch"]
    """sequences per batch (the tiny preset's)"""
    seq_len: int = PRESET_DEFAULTS["tiny"]["seq_len"]
    """tokens per sequence (the tiny preset's)"""
    data: str | None = None
    """text file or folder (default: this Python's stdlib sources, as `trainprof run`)"""

    def __post_init__(self) -> None:
        self._positive("micro_batch", "seq_len")
        if self.batches < 2:
            self._fail("batches", f"must be ≥ 2 (the first batch is timed apart), got {self.batches}")
        if any(w < 0 for w in self.workers):
            self._fail("workers", f"must be ≥ 0, got {self.workers}")

    def resolved(self, kind: str) -> "DataloaderConfig":
        c = self._fill(kind)
        if kind != "cuda" and True in c.pin_memory:
            c._fail("pin_memory", "on: pinned memory only speeds up copies to a GPU; there is none on this device")
        return c


@dataclass(frozen=True)
class ShapesConfig(_Config):
    PATH: ClassVar[str] = "bench.shapes"
    DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {
        "cpu": {"tokens": 256, "seq_len": 256, "dtype": "fp32", "warmup": 1, "iters": 5, "budget_s": 0.3},
        "cuda": {"tokens": 8192, "seq_len": 2048, "dtype": "bf16", "warmup": 10, "iters": 30, "budget_s": 1.0},
    }

    hidden: int = option(PRESETS["gpt2-124m"].d_model, metavar="H")
    """model width h (GPT-2 small's)"""
    vocab: int = option(PRESETS["gpt2-124m"].vocab_size, metavar="V")
    """vocabulary size to pad (GPT-2's)"""
    tokens: int | None = option(None, metavar="M")
    """GEMM rows M = batch · sequence"""
    seq_len: int | None = option(None, metavar="T")
    """sequence length T of the attention-score GEMMs"""
    dtype: Literal["fp32", "tf32", "bf16", "fp16"] | None = option(None, parse=_lower)
    """element type of the GEMMs"""
    ff_steps: int = option(3, metavar="K")
    """d_ff candidates: multiples of 64 up to this many steps either side of 8/3·h"""
    warmup: int | None = None
    """untimed calls per candidate"""
    iters: int | None = None
    """most timed calls per candidate"""
    budget_s: float | None = None
    """stop timing a candidate after this many seconds (at least 3 calls)"""

    def __post_init__(self) -> None:
        self._positive("hidden", "vocab", "tokens", "seq_len", "iters", "budget_s")
        self._non_negative("warmup", "ff_steps")
        if self.dtype is not None and self.dtype not in ("fp32", "tf32", "bf16", "fp16"):
            self._fail("dtype", f"{self.dtype!r}: expected fp32, tf32, bf16 or fp16")

    def resolved(self, kind: str) -> "ShapesConfig":
        c = self._fill(kind)
        if c.dtype == "tf32" and kind != "cuda":
            c._fail("dtype", "tf32 is a GPU tensor-core mode; on CPU use fp32, bf16 or fp16")
        if c.tokens % c.seq_len:
            c._fail("tokens", f"{c.tokens} must be a multiple of --seq-len {c.seq_len}")
        return c


# `trainprof bench KIND` → its configuration (the kinds that train the workload: workload_config.TRAINS)
KINDS: dict[str, type] = {"matmul": MatmulConfig, "bandwidth": BandwidthConfig, "allreduce": CollectiveConfig,
                          "dataloader": DataloaderConfig, "shapes": ShapesConfig}
