"""A loop whose Dataset reads slowly (`time.sleep` per sample) through a DataLoader with
num_workers=0 (`trainprof tune -- COMMAND` tests: the workers knob must win, by no more than
the data wait the profile measures)."""

import argparse
import time

import torch
import torch.nn.functional as F

FEATURES, CLASSES = 16, 4


class SlowDataset(torch.utils.data.Dataset):
    """Sample i is a fixed function of i; reading it takes `delay` seconds (a slow disk)."""

    def __init__(self, n: int, delay: float) -> None:
        g = torch.Generator().manual_seed(3)
        self.x, self.y = torch.randn(n, FEATURES, generator=g), torch.randint(0, CLASSES, (n,), generator=g)
        self.delay = delay

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        time.sleep(self.delay)
        return self.x[i], self.y[i]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.005)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(), torch.nn.Linear(32, CLASSES))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = SlowDataset(args.steps * args.batch, args.delay)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=0,
                                         generator=torch.Generator().manual_seed(1))
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"done: {step + 1} steps, final loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
