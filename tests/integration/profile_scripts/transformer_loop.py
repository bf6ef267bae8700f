"""A small transformer language model, a DataLoader of token windows, optional gradient
accumulation (`--accum K`: K micro-batches, K backward passes, one optimizer.step())."""

import argparse

import torch
import torch.nn.functional as F

VOCAB, D, T, BATCH = 64, 32, 16, 4


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, D)
        self.block = torch.nn.TransformerEncoderLayer(D, nhead=2, dim_feedforward=4 * D, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(D, VOCAB)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        mask = torch.nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
        return self.head(self.block(self.emb(idx), src_mask=mask, is_causal=True))


def build() -> torch.nn.Module:
    torch.manual_seed(0)
    return Tiny()


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randint(0, VOCAB, (BATCH, T + 1))
    return x[:, :-1], x[:, 1:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--accum", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = build()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (args.steps * args.accum * BATCH, T + 1), generator=g)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens[:, :-1], tokens[:, 1:]),
                                         batch_size=BATCH, shuffle=True, generator=g)
    it = iter(loader)
    for step in range(args.steps):
        for _ in range(args.accum):
            x, y = next(it)
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten()) / args.accum
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    print(f"done: {args.steps} steps of {args.accum} micro-batches, last loss {loss.item() * args.accum:.6f}")


if __name__ == "__main__":
    main()
