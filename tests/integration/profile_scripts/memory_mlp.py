"""An MLP whose activations grow with its own --batch-size (`trainprof memory -- COMMAND`):
Linear 1024→4096, GELU, Linear 4096→1024 keeps about batch × (1024 + 4096 + 4096) fp32 values
for backward (36 KiB a row: 9 MiB at 256 rows, 36 MiB at 1024), each tensor above glibc's
mmap threshold, so it leaves the RSS when freed and the step's start holds none of them."""

import argparse

import torch
import torch.nn.functional as F


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 1024)
        loss = F.mse_loss(model(x), x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
