"""An MLP trained eagerly, compiled (`--compile BACKEND`: torch.compile's aot_eager here, which
traces with dynamo and AOTAutograd as inductor does, without inductor's C++ build), or with its
own activation checkpointing (`--checkpoint`): `trainprof profile` must count the same model
FLOPs for all three, and for the checkpointed one HFU above MFU (issue #38 item 3)."""

import argparse

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class MLP(torch.nn.Module):
    def __init__(self, ckpt: bool) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
        self.head = torch.nn.Linear(64, 8)
        self.ckpt = ckpt

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = checkpoint(self.block, x, use_reentrant=False) if self.ckpt else self.block(x)
        return self.head(h)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--compile", default=None)
    ap.add_argument("--checkpoint", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = MLP(args.checkpoint)
    if args.compile:
        model.compile(backend=args.compile)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
