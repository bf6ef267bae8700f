"""A Lightning fit: a small MLP LightningModule (its optimizer.step(closure) runs forward and
backward inside the optimizer's step)."""

import argparse

import torch
import torch.nn.functional as F

BATCH, FEATURES, CLASSES = 16, 32, 4


def build():  # noqa: ANN201
    import lightning.pytorch as pl

    class Classifier(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(),
                                           torch.nn.Linear(64, CLASSES))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.net(x)

        def training_step(self, batch, batch_idx):  # noqa: ANN001, ANN201
            x, y = batch
            return F.cross_entropy(self(x), y)

        def configure_optimizers(self):  # noqa: ANN201
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    return Classifier()


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(BATCH, FEATURES), torch.randint(0, CLASSES, (BATCH,))


def main() -> None:
    import lightning.pytorch as pl

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    data = torch.utils.data.TensorDataset(torch.randn(args.steps * BATCH, FEATURES, generator=g),
                                          torch.randint(0, CLASSES, (args.steps * BATCH,), generator=g))
    trainer = pl.Trainer(accelerator="cpu", devices=1, max_steps=args.steps, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, default_root_dir=args.out)
    trainer.fit(build(), torch.utils.data.DataLoader(data, batch_size=BATCH))
    print(f"lightning done: {trainer.global_step} optimizer steps")


if __name__ == "__main__":
    main()
