"""A few training steps of a tiny model, then exit code 3: `trainprof profile` must return the
program's own exit code and keep what it measured, whatever happens to it after the program
ends (issue #45: under `ulimit -v` the chart renderer aborted trainprof with exit 133)."""

import sys

import torch


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    for _ in range(12):
        x = torch.randn(16, 32)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    sys.exit(3)


if __name__ == "__main__":
    main()
