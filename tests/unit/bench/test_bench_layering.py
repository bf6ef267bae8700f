"""bench/ reaches devices only through backends/ (ARCHITECTURE.md: device code lives there)."""

from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "src" / "trainprof" / "bench"


def test_bench_never_touches_torch_cuda_directly():
    for f in BENCH.rglob("*.py"):
        text = f.read_text("utf-8")
        assert "torch.cuda" not in text and "trainprof.cli" not in text, f.name


def test_importing_bench_touches_no_device():
    import subprocess
    import sys

    # torch must not even be imported by the package and its pure modules
    code = ("import sys; import trainprof.bench, trainprof.bench.busbw, trainprof.bench.parse, "
            "trainprof.bench.config; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
