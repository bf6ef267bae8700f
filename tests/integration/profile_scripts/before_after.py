"""One MLP training loop, changed the way a newcomer changes theirs (`trainprof diff` tests,
tests/integration/test_diff_pairs.py): each flag is the "after" of a before/after pair.

`--item-sleep S`: each sample costs S seconds in `__getitem__` (a slow disk, decoding); with
`--workers 0` the step waits for it, with `--workers N` N processes load batches ahead.
`--batch B`: samples per step. `--item`: `loss.item()` every step, a host sync that costs
nothing on CPU, where no device runs ahead to wait for.
"""

import argparse
import time

import torch
import torch.nn.functional as F

# Many thin layers: a step is mostly per-layer and per-tensor overhead (kernel calls, the
# optimizer's loop over 2 × DEPTH tensors), ~2-4 ms whatever the batch: 4× the batch costs
# little more, the newcomer's "bigger batch" win.
FEATURES, DEPTH, CLASSES = 32, 24, 10


class Samples(torch.utils.data.Dataset):
    def __init__(self, n: int, sleep_s: float) -> None:
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, FEATURES, generator=g)
        self.y = torch.randint(0, CLASSES, (n,), generator=g)
        self.sleep_s = sleep_s

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return self.x[i], self.y[i]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--item-sleep", type=float, default=0.0)
    ap.add_argument("--item", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)  # steady step times on a shared machine
    torch.manual_seed(0)
    layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(FEATURES, FEATURES), torch.nn.ReLU())]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(FEATURES, CLASSES))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(Samples(args.steps * args.batch, args.item_sleep), batch_size=args.batch,
                                         num_workers=args.workers)
    losses = []
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item() if args.item else loss.detach())
    print(f"done: {len(losses)} steps, last loss {float(losses[-1]):.6f}")


if __name__ == "__main__":
    main()
