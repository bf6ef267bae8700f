"""DDP on gloo, for torchrun: each rank trains the same MLP on its own batches."""

import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

BATCH, FEATURES, CLASSES = 8, 32, 4


def build() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES))


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(BATCH, FEATURES), torch.randint(0, CLASSES, (BATCH,))


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.parallel.DistributedDataParallel(build())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(int(os.environ.get("STEPS", "10"))):
        x = torch.randn(BATCH, FEATURES, generator=g)
        y = torch.randint(0, CLASSES, (BATCH,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    w = sum(float(p.detach().sum()) for p in model.parameters())  # identical on every rank after DDP's all-reduces
    print(f"rank {rank} done: weights sum {w:.6f}")
    # torch's own exit race, with or without trainprof: a rank that exits right after its last
    # gloo collective can abort ("terminate called without an active exception"); a tenth of a
    # second lets gloo's worker drop its tensors first (trainprof/backends/distributed.py)
    time.sleep(0.1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
