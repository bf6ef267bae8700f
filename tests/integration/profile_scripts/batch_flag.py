"""A loop with its own --batch-size flag and a fixed cost per step (`time.sleep`: a logging call,
a host sync), so a larger batch trains more samples per second (`trainprof tune --arg-knob
"--batch-size=..." -- COMMAND` tests: compared per sample, not per step)."""

import argparse
import time

import torch
import torch.nn.functional as F

FEATURES, CLASSES = 16, 4


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--step-cost", type=float, default=0.01)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(), torch.nn.Linear(32, CLASSES))
    teacher = torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1)
    for step in range(args.steps):
        x = torch.randn(args.batch_size, FEATURES, generator=g)
        loss = F.cross_entropy(model(x), (x @ teacher).argmax(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(args.step_cost)
    print(f"done: {step + 1} steps, final loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
