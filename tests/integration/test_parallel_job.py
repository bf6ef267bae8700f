"""Parallel jobs launched for real (torchrun, gloo ranks, the tiny GPT): DP×TP 2×2, whose losses
equal one process's on the same batches and every collective of whose traces lands on its
axis; `run --strategy tp` and `run --strategy pp` on 2 ranks against one process (pp: its step
split too). The analysis itself is tested on committed traces of every layout
(tests/unit/analysis/test_axes_bubble.py); DP×PP losses were checked the same way by hand
(tests/data/traces/cpu_parallel/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainprof.analysis.job.collectives import rank_collectives
from trainprof.analysis.job.collectives_job import job_collectives
from trainprof.analysis.timeline.context import Context
from trainprof.trace import read_trace
from trainprof.workload import layout_train, mesh
from trainprof.workload.config import ModelConfig

SCRIPT = Path(__file__).parents[1] / "data" / "scripts" / "parallel_job.py"


@pytest.mark.slow
def test_dp_tp_job_same_loss_and_axes(tmp_path):
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4",
                        "--monitor-interval=0.1", str(SCRIPT), str(tmp_path), "2", "2", "1", '{"steps": 1}'],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[:3000] + "\n...\n" + r.stderr[-1500:]
    # steps 0 (outside the profiler), 1 (profiler warm-up), 2 (recorded)
    model = ModelConfig(n_layer=4, n_head=4, d_model=64, vocab_size=256, context_len=256)
    want = layout_train.reference_losses(layout_train.LayoutRun(model=model, layout=mesh.Layout(), steps=3))
    for f in tmp_path.glob("losses_rank*.txt"):
        assert json.loads(f.read_text()) == pytest.approx(want, abs=1e-4)
    blocks = {}
    for f in sorted(tmp_path.glob("rank*.json")):
        t = read_trace(f)
        blocks[t.meta.rank] = rank_collectives(Context.build(t))
    job = job_collectives(blocks)
    axis = {g.name: g.axis for g in job.process_groups}
    for b in blocks.values():
        for n, g in zip(b.nelems, b.group):
            assert axis[g] == ("tp" if n == 4 * 64 * 64 else "dp")
    assert sum(len(b.op) for b in blocks.values()) == 4 * 17  # 16 TP all_reduces and 1 DP one per rank


@pytest.mark.slow  # torchrun, 2 ranks of the tiny preset: ~15 s on 2 quiet cores
def test_run_tensor_parallel_equals_one_process(tmp_path):
    """`trainprof run --strategy tp --nproc 2`: the same losses as `run` in one process on the
    same batches, clipping every step on both (workload/clip.py). The gradient norms of the 3
    steps are 11.0, 4.76 and 3.15 (logged by hand, the same in both): --grad-clip 1e-4 scales the
    gradients' elements down to AdamW's eps (1e-8), where its update depends on the scale, so a
    wrong global norm changes the losses. Measured: unclipped, steps 1 and 2 are 3e-3 and 0.13
    away from these (at the default --grad-clip 1, only 3e-5 and 8e-3 from the unclipped: AdamW
    undoes most of a uniform scale, too little for this test's 1e-4)."""
    import random

    from trainprof.workload.config import TrainConfig
    from trainprof.workload.trainer import train

    corpus = tmp_path / "corpus.txt"  # 100 kB: reading the default corpus (stdlib sources) costs seconds a rank
    rng = random.Random(0)
    corpus.write_text("".join(rng.choice("abcdefghij klmnop\n") for _ in range(100_000)))
    small = ["--steps", "3", "--warmup-steps", "1", "--micro-batch", "4", "--seq-len", "32", "--eval-batches", "0",
             "--grad-clip", "1e-4", "--system-interval", "0", "--device", "cpu", "--data", str(corpus)]
    out = tmp_path / "tp"
    r = subprocess.run([sys.executable, "-m", "trainprof", "run", *small, "--strategy", "tp", "--nproc", "2",
                        "--out", str(out), "--no-report", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads((out / "run.json").read_text())
    assert rec["layout"] == {"dp": 1, "tp": 2, "pp": 1, "strategy": "tp", "schedule": None, "microbatches": None}
    assert rec["distributed"]["global_batch_tokens"] == 4 * 32  # both ranks read the replica's rows
    assert not [w for w in rec["warnings"] if "grad-clip" in w]  # the warning of #42 is gone
    one = train(TrainConfig(steps=3, warmup_steps=1, micro_batch=4, seq_len=32, eval_batches=0, grad_clip=1e-4,
                            device="cpu", data=str(corpus)).resolved())
    assert [s["loss"] for s in rec["steps"]] == pytest.approx([s.loss for s in one.steps], abs=1e-4)


@pytest.mark.slow  # torchrun, 2 ranks of the tiny preset
def test_run_pipeline_parallel_equals_one_process_and_times_its_waits(tmp_path):
    """`trainprof run --strategy pp --nproc 2` (GPipe, 4 micro-batches): the losses of one
    process on the same batches, and the step split of a stage: its forwards, its backwards and,
    apart, the schedule's waits, sends and receives (`pipeline_s`, workload/pipeline.Split),
    which the parts add up to with the rest."""
    import random

    from trainprof.workload.config import TrainConfig
    from trainprof.workload.trainer import train

    corpus = tmp_path / "corpus.txt"
    rng = random.Random(0)
    corpus.write_text("".join(rng.choice("abcdefghij klmnop\n") for _ in range(100_000)))
    small = ["--steps", "3", "--warmup-steps", "1", "--micro-batch", "4", "--seq-len", "32", "--eval-batches", "0",
             "--system-interval", "0", "--device", "cpu", "--data", str(corpus)]
    out = tmp_path / "pp"
    r = subprocess.run([sys.executable, "-m", "trainprof", "run", *small, "--strategy", "pp", "--nproc", "2",
                        "--pp-microbatches", "4", "--out", str(out), "--no-report", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads((out / "run.json").read_text())
    assert rec["layout"]["pp"] == 2 and rec["layout"]["microbatches"] == 4
    one = train(TrainConfig(steps=3, warmup_steps=1, micro_batch=4, seq_len=32, eval_batches=0,
                            device="cpu", data=str(corpus)).resolved())
    assert [s["loss"] for s in rec["steps"]] == pytest.approx([s.loss for s in one.steps], abs=1e-4)
    for s in rec["steps"]:
        assert s["forward_s"] > 0 and s["backward_s"] > 0 and s["pipeline_s"] > 0
        parts = sum(s[k] for k in ("data_s", "h2d_s", "forward_s", "backward_s", "pipeline_s", "optimizer_s",
                                   "other_s"))
        assert parts == pytest.approx(s["step_time_s"], rel=1e-6, abs=1e-6)
    split = rec["summary"]["phase_split"]
    assert list(split)[3:5] == ["backward_s", "pipeline_s"] and rec["summary"]["pipeline_s"] > 0
