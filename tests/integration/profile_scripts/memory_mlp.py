"""An MLP whose activations grow with its own --batch-size (`trainprof memory -- COMMAND`):
Linear 256→1024, GELU, Linear 1024→256 keeps about batch × (256 + 1024 + 1024) fp32 values
for backward (9 KiB a row: 9 MiB at 1024 rows, 36 MiB at 4096), each tensor above glibc's
mmap threshold, so it leaves the RSS when freed and the step's start holds none of them.
(Narrow layers and many rows: the same bytes as 1024→4096 at a quarter of the rows, for a
quarter of the arithmetic: ~3 MFLOP a row.)"""

import argparse

import torch
import torch.nn.functional as F


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 256)
        loss = F.mse_loss(model(x), x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
