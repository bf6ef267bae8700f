"""A model of many small parameter tensors stepped by a for-loop AdamW (foreach=False), its
batches made in the loop (no DataLoader): `trainprof tune -- COMMAND` tests (the fused/foreach
knob is tried; the DataLoader knobs are skipped)."""

import argparse

import torch

LAYERS, WIDTH = 48, 8


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())
                                  for _ in range(LAYERS)])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    g = torch.Generator().manual_seed(1)
    for step in range(args.steps):
        x = torch.randn(4, WIDTH, generator=g)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"done: {step + 1} steps, final loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
