"""A plain training loop: an MLP on random features, a DataLoader, AdamW (`trainprof profile` tests).

`--raise-at N` fails at step N, before its forward: the crash test. `--step-sleep S` makes
each step S seconds longer: a job that runs on after trainprof's window (the signal test).
"""

import argparse
import time

import torch
import torch.nn.functional as F

BATCH, FEATURES, CLASSES = 16, 32, 4


def build() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES))


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of the loop's shapes (the tests count one step's FLOPs by hand on it)."""
    return torch.randn(BATCH, FEATURES), torch.randint(0, CLASSES, (BATCH,))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--raise-at", type=int, default=-1)
    ap.add_argument("--step-sleep", type=float, default=0.0)
    args = ap.parse_args()
    torch.set_num_threads(1)  # steady step times on a shared machine
    model = build()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    data = torch.utils.data.TensorDataset(torch.randn(args.steps * BATCH, FEATURES, generator=g),
                                          torch.randint(0, CLASSES, (args.steps * BATCH,), generator=g))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True, generator=g)
    for step, (x, y) in enumerate(loader):
        if step == args.raise_at:
            raise RuntimeError(f"planted failure at step {step}")
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(args.step_sleep)
        if step % 4 == 0:
            print(f"step {step} loss {loss.item():.6f}")
    print(f"done: {step + 1} steps, final loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
