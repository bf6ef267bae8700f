"""A program that can tell if anything touches it (`trainprof profile` must not be seen).

It draws from torch's *global* generator every step (its batches), registers its own global
optimizer step pre/post hooks and a global module forward hook at start, and one more of each
in the middle of training (step 6, between steps); each hook counts its calls. Every step it
deep-copies its model and pickles the copy whole with torch.save (the bytes go into the digest):
a hook of trainprof's on the model would travel with it, or break the pickling. It prints the loss, the hook counts and a digest of the next global
draw at every step, and its peak RSS's growth is not printed (that is trainprof's to keep
small, tested elsewhere). A plain run and a profiled run must print the same bytes.
"""

import argparse
import copy
import hashlib
import io
import random

import torch
import torch.nn.functional as F
from torch.nn.modules import module as nn_module
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

calls = {"pre": 0, "post": 0, "fwd": 0, "late_post": 0}
handles = []


def pre(opt, args, kwargs):
    calls["pre"] += 1


def post(opt, args, kwargs):
    calls["post"] += 1


def late_post(opt, args, kwargs):
    calls["late_post"] += 1


def fwd(module, args, out):
    calls["fwd"] += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=24)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)  # the program's own seed: every draw below is from the global generator
    random.seed(0)
    handles.append(register_optimizer_step_post_hook(post))
    handles.append(register_optimizer_step_pre_hook(pre))
    handles.append(nn_module.register_module_forward_hook(fwd))
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 6:
            handles.append(register_optimizer_step_post_hook(late_post))
        ema = copy.deepcopy(model)  # an EMA copy, as many programs keep: hooks on the model would travel
        buf = io.BytesIO()
        torch.save(ema, buf)  # the whole module pickled (word_language_model saves its model so)
        digest = hashlib.sha256(torch.rand(4).numpy().tobytes() + str(random.random()).encode()
                                + buf.getvalue()).hexdigest()[:16]
        print(f"step {step} loss {loss.item():.8f} calls {sorted(calls.items())} next {digest}", flush=True)


if __name__ == "__main__":
    main()
