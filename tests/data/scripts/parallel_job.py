"""A gloo job of the reference GPT on a dp × tp × pp layout, profiled: the traces of
tests/data/traces/cpu_parallel/ and the smoke test of tests/integration/test_parallel_job.py.

Usage: torchrun --standalone --nproc-per-node N parallel_job.py OUT DP TP PP [options as JSON]
Options (JSON object): schedule, microbatches, steps (profiled), delay_stage, delay_ms,
grad_clip (max_norm; default 0: off), losses_only (run `steps` steps unprofiled and write
the losses). Writes OUT/rank{R}.json and OUT/losses_rank{R}.txt (JSON: the losses the rank
computed; .txt so `analyze OUT` does not read it as a trace).
"""

import json
import os
import sys
from pathlib import Path

import torch

from trainprof.backends.distributed import end_process_group
from trainprof.workload import layout_train, mesh
from trainprof.workload.config import ModelConfig

out, dp, tp, pp = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
opt = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
torch.set_num_threads(1)  # 4 ranks share 2 cores
threads = mesh.init_default("gloo")
layout = mesh.Layout(dp=dp, tp=tp, pp=pp, schedule=opt.get("schedule", "gpipe"),
                     microbatches=opt.get("microbatches", 4))
model = ModelConfig(n_layer=4, n_head=4, d_model=opt.get("d_model", 64), vocab_size=256, context_len=256)
run = layout_train.LayoutRun(model=model, layout=layout, global_batch=opt.get("global_batch", 8),
                             seq_len=opt.get("seq_len", 64), delay_stage=opt.get("delay_stage", -1),
                             delay_ms=opt.get("delay_ms", 0.0), steps=opt.get("steps", 3),
                             grad_clip=opt.get("grad_clip", 0.0))
job = layout_train.Job(run, threads)
if opt.get("losses_only"):
    losses = [job.step(s) for s in range(run.steps)]
else:
    losses = layout_train.profiled(job, run.steps, out)
(out / f"losses_rank{job.rank}.txt").write_text(json.dumps(losses))
import torch.distributed as dist  # noqa: E402
dist.barrier()
end_process_group()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # as planted_straggler.py: no interpreter shutdown under gloo's workers
