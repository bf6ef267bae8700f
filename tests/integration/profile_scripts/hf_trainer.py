"""A Hugging Face Trainer run on a tiny GPT-2 built from a config (random weights, no download)."""

import argparse

import torch

B, T = 4, 16


def build():  # noqa: ANN201
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=128, n_positions=T,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


def batch() -> dict:
    ids = torch.randint(0, 128, (B, T))
    return {"input_ids": ids, "labels": ids.clone()}


def main() -> None:
    import transformers

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 128, (args.steps * args.accum * B, T), generator=g)
    data = [{"input_ids": r, "labels": r.clone()} for r in ids]
    targs = transformers.TrainingArguments(
        output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=B,
        gradient_accumulation_steps=args.accum, logging_steps=1000, save_strategy="no", use_cpu=True,
        disable_tqdm=True, report_to=[], seed=0, dataloader_num_workers=0)
    trainer = transformers.Trainer(model=build(), args=targs, train_dataset=data)
    trainer.train()
    print(f"hf done: {trainer.state.global_step} optimizer steps")


if __name__ == "__main__":
    main()
