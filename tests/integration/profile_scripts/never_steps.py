"""A loop that never calls optimizer.step(): it updates the parameters by hand in
`train_step`, so `trainprof profile` finds no step boundary unless told
`--step-marker never_steps:train_step`."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)


def train_step(x: torch.Tensor, y: torch.Tensor) -> float:
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
            p.grad = None
    return loss.item()


if __name__ == "__main__":
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    for step in range(10):
        x = torch.randn(4, 8, generator=g)
        loss = train_step(x, x.sum(1, keepdim=True))
    print(f"done: 10 steps, final loss {loss:.6f}")
