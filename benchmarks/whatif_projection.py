"""What-if projections vs measured step times on the CPU, more pairs than the test.

    PYTHONPATH=src python benchmarks/whatif_projection.py [--rounds 21] [--out FILE]

For each data delay D (ms per sample): `trainprof run --data-delay-ms D --profile` writes a
trace; `remove data_loading` on it projects the step without the wait. The measurement
steps the same model, optimizer and DataLoader in one process, configurations taking turns
(A = the profiled one, B = no delay, C = delay with `num_workers=2`, the ladder's workers
knob), so the other tenants' load on this shared machine moves them alike; measured B =
median(A) − median over rounds of (A − B) (tests/integration/test_whatif_projection.py
explains why). Prints a table and writes JSON with the environment.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

VERSION = 1
REPO = Path(__file__).resolve().parent.parent


def profile_saving_ms(tmp: Path, corpus: str, mb: int, seq: int, delay: float) -> tuple[float, float, float]:
    from trainprof.analysis.graph.whatif import Edit, whatif_trace
    from trainprof.cli import main
    from trainprof.trace import read_trace

    out = tmp / f"p{mb}_{seq}_{delay:g}"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", "--preset", "tiny", "--micro-batch", str(mb), "--seq-len", str(seq), "--data", corpus,
                     "--data-delay-ms", str(delay), "--threads", "1", "--device", "cpu", "--steps", "2",
                     "--warmup-steps", "1", "--eval-batches", "0", "--no-report", "--profile", "--profile-steps",
                     "5", "--out", str(out)]) == 0
    (s,) = whatif_trace(read_trace(str(out / "trace.json.gz")), file=str(out),
                        edits=[Edit("remove", "data_loading")])["scenarios"]
    return ((s["measured_step_us"] - s["projected_step_us"]) / 1e3, s["measured_step_us"] / 1e3,
            s["projected_step_us"] / 1e3)


def measure(corpus: str, mb: int, seq: int, delay: float, rounds: int) -> dict[str, list[float]]:
    import torch

    from trainprof.workload.config import TrainConfig
    from trainprof.workload.data import load_corpus, make_loader
    from trainprof.workload.model import GPT
    from trainprof.workload.trainer import make_optimizer

    cfg = TrainConfig(preset="tiny", micro_batch=mb, seq_len=seq).resolved()
    tokens = load_corpus(corpus).train
    torch.manual_seed(0)
    model = GPT(cfg.model)
    opt = make_optimizer(model, cfg)

    def loader(d: float, workers: int):
        return iter(make_loader(tokens, seq_len=seq, micro_batch=mb, n_batches=rounds + 1, seed=1,
                                num_workers=workers, delay_s=d / 1e3))

    configs = {"A": loader(delay, 0), "B": loader(0.0, 0), "C": loader(delay, 2)}
    times: dict[str, list[float]] = {k: [] for k in configs}
    for r in range(rounds + 1):
        for name, it in configs.items():
            time.sleep(mb * delay / 1e3)  # same idle time before every step (see the test)
            t0 = time.perf_counter()
            x, y = next(it)
            loss = model(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            opt.step()
            opt.zero_grad(set_to_none=True)
            loss.item()
            if r:
                times[name].append(1e3 * (time.perf_counter() - t0))
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "whatif_projection.json"))
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    tmp = Path(tempfile.mkdtemp(prefix="whatif-bench-"))
    rng = random.Random(0)
    corpus = tmp / "corpus.txt"
    corpus.write_text("".join(rng.choice("abcdefghij klmnop\n") for _ in range(100_000)))
    rows = []
    print(f"{'config':28} {'saving':>8} {'A meas':>8} {'proj':>8} {'B meas':>8} {'err B':>7} {'C meas':>8} "
          f"{'err C':>7} {'load':>5}")
    for mb, seq, delay in ((1, 32, 15.0), (1, 32, 30.0), (2, 64, 30.0), (1, 32, 60.0), (4, 64, 30.0)):
        load0 = os.getloadavg()[0]
        saving, trace_meas, trace_proj = profile_saving_ms(tmp, str(corpus), mb, seq, delay)
        m = measure(str(corpus), mb, seq, delay, args.rounds)
        a = statistics.median(m["A"])
        proj = a - saving
        meas = {k: a - statistics.median(x - y for x, y in zip(m["A"], m[k])) for k in ("B", "C")}
        err = {k: 100 * (proj - v) / v for k, v in meas.items()}
        load = (load0 + os.getloadavg()[0]) / 2
        name = f"mb {mb}, seq {seq}, delay {delay:g} ms"
        print(f"{name:28} {saving:8.1f} {a:8.1f} {proj:8.1f} {meas['B']:8.1f} {err['B']:6.1f}% {meas['C']:8.1f} "
              f"{err['C']:6.1f}% {load:5.1f}")
        sys.stdout.flush()
        rows.append({"micro_batch": mb, "seq_len": seq, "delay_ms": delay, "saving_ms": saving,
                     "trace_step_ms": trace_meas, "trace_projected_ms": trace_proj, "a_median_ms": a,
                     "projected_ms": proj, "measured_b_ms": meas["B"], "measured_c_ms": meas["C"],
                     "err_b_pct": err["B"], "err_c_pct": err["C"], "load_avg": load,
                     "times_ms": {k: v for k, v in m.items()}})
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import environment, write_json

    write_json(args.out, {"benchmark": "whatif_projection", "version": VERSION, "rounds": args.rounds,
                          "environment": {**environment("cpu"), "cpus": os.cpu_count()}, "results": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
