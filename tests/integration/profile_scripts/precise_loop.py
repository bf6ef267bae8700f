"""A regression whose targets sit near 1000 (`trainprof tune -- COMMAND` tests: knobs that break
its accuracy). bf16 spaces its values 4 apart between 512 and 1024, so a bf16 matmul rounds the
model's output by up to ±2 where the fp32 loss is ~1: bf16 autocast ruins it. `--lr` is the
program's own flag: a learning rate of 5 diverges (the inputs' Hessian has eigenvalues ~2)."""

import argparse

import torch

FEATURES, OFFSET = 8, 1000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--lr", type=float, default=0.01)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(FEATURES, 1)
    with torch.no_grad():
        model.bias.fill_(OFFSET)
    w_true = torch.randn(FEATURES, 1, generator=torch.Generator().manual_seed(2))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(1)
    for step in range(args.steps):
        x = torch.randn(32, FEATURES, generator=g)
        loss = torch.nn.functional.mse_loss(model(x), x @ w_true + OFFSET)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"done: {step + 1} steps, final loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
