"""Working folders for the vendored third-party training scripts (tests/data/thirdparty/*/):
the script's files copied unmodified, synthetic data written beside them, and the tiny
command line each is run with (tests/integration/test_thirdparty_profile.py).

Every folder is made fresh: a script writes its own outputs (nanoGPT `out/`, minGPT
`out/chargpt/`, word_language_model's `--save` file) relative to its working directory.
The data come from `random.Random(seed)`, never from torch's generator: the scripts seed
torch themselves and the data must not depend on anything that ran before.

    python tests/data/thirdparty/make_data.py nanogpt /tmp/work   # prints the command to run there
"""

from __future__ import annotations

import pickle
import random
import shutil
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Prepared:
    work: Path  # the working directory to run the script in
    argv: list[str]  # the script and its arguments (after `python`)
    shape: dict = field(default_factory=dict)  # the sizes the test's hand count needs


def _copy(name: str, files: list[str], work: Path) -> None:
    for f in files:
        dst = work / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HERE / name / f, dst)


# ---- nanoGPT ---------------------------------------------------------------------------
# train.py reads data/<dataset>/{train,val}.bin with np.memmap(dtype=np.uint16) and takes
# vocab_size from data/<dataset>/meta.pkl (a pickle, its own format; else GPT-2's 50304,
# which would make the lm_head 50304 x n_embd: far too slow here).
NANOGPT_VOCAB = 96
NANOGPT_SHAPE = dict(n_layer=2, n_head=2, n_embd=64, block_size=64, batch_size=8, grad_accum=2,
                     vocab_size=NANOGPT_VOCAB)


def nanogpt(work: Path, max_iters: int = 12, seed: int = 0) -> Prepared:
    _copy("nanogpt", ["train.py", "model.py", "configurator.py"], work)
    data = work / "data" / "synth"
    data.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for split, n in (("train", 20_000), ("val", 2_000)):
        with (data / f"{split}.bin").open("wb") as f:  # native byte order, as np.memmap reads it
            array("H", (rng.randrange(NANOGPT_VOCAB) for _ in range(n))).tofile(f)
    with (data / "meta.pkl").open("wb") as f:
        pickle.dump({"vocab_size": NANOGPT_VOCAB}, f)
    s = NANOGPT_SHAPE
    argv = ["train.py", "--device=cpu", "--compile=False", "--dtype=float32", "--dataset=synth",
            f"--n_layer={s['n_layer']}", f"--n_head={s['n_head']}", f"--n_embd={s['n_embd']}",
            f"--block_size={s['block_size']}", f"--batch_size={s['batch_size']}",
            f"--gradient_accumulation_steps={s['grad_accum']}", f"--max_iters={max_iters}",
            "--eval_interval=1000", "--eval_iters=1", "--log_interval=1", "--always_save_checkpoint=False"]
    return Prepared(work, argv, dict(s))


# ---- PyTorch examples: word_language_model ----------------------------------------------
# data.Corpus reads DIR/{train,valid,test}.txt, splits lines on whitespace and appends
# '<eos>' to each line; the vocabulary is every word seen in the three files.
WLM_WORDS = 48  # + '<eos>': 49 tokens
WLM_SHAPE = dict(emsize=32, nhid=32, nlayers=1, bptt=16, batch_size=8)
WLM_TRAIN_BATCHES = 14  # full bptt chunks in one epoch: warm-up 2 + 4 measured + 4 profiler + 4 more


def word_language_model(work: Path, seed: int = 0, extra: tuple[str, ...] = ()) -> Prepared:
    _copy("word_language_model", ["main.py", "model.py", "data.py"], work)
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(WLM_WORDS)]
    s = WLM_SHAPE
    # 9 words + <eos> a line: 10 tokens. train: batch_size columns of WLM_TRAIN_BATCHES*bptt + 1 rows
    rows = WLM_TRAIN_BATCHES * s["bptt"] + 1
    lines = {"train.txt": rows * s["batch_size"] // 10, "valid.txt": 20, "test.txt": 20}
    for name, n in lines.items():
        seq = words if name == "train.txt" else []  # every word in train: the vocabulary is known
        seq = seq + [rng.choice(words) for _ in range(9 * n - len(seq))]
        text = [" ".join(seq[i:i + 9]) for i in range(0, 9 * n, 9)]
        (data / name).write_text("\n".join(text) + "\n", encoding="utf-8")
    argv = ["main.py", "--data", str(data), "--model", "LSTM", "--emsize", str(s["emsize"]),
            "--nhid", str(s["nhid"]), "--nlayers", str(s["nlayers"]), "--bptt", str(s["bptt"]),
            "--batch_size", str(s["batch_size"]), "--epochs", "1", "--log-interval", "1",
            "--save", str(work / "model.pt"), *extra]
    return Prepared(work, argv, dict(s, vocab_size=WLM_WORDS + 1))


# ---- minGPT: projects/chargpt -----------------------------------------------------------
# chargpt.py reads ./input.txt; its vocabulary is the set of characters. At iteration 0 its
# callback samples 500 characters after the context "O God, O God!" (top_k=10): every
# character of the context must be in the vocabulary, and there must be at least 10.
MINGPT_CHARS = "abcdefghij OGd,!\n"
MINGPT_SHAPE = dict(n_layer=2, n_head=2, n_embd=64, block_size=32, batch_size=8,
                    vocab_size=len(set(MINGPT_CHARS)))


def mingpt(work: Path, max_iters: int = 12, num_workers: int = 4, seed: int = 0) -> Prepared:
    _copy("mingpt", ["mingpt/__init__.py", "mingpt/model.py", "mingpt/trainer.py", "mingpt/utils.py"], work)
    shutil.copyfile(HERE / "mingpt" / "projects" / "chargpt" / "chargpt.py", work / "chargpt.py")
    rng = random.Random(seed)
    text = "O God, O God!\n" + "".join(rng.choice(MINGPT_CHARS) for _ in range(5_000))
    (work / "input.txt").write_text(text, encoding="utf-8")
    s = MINGPT_SHAPE
    argv = ["chargpt.py", "--model.model_type=None", f"--model.n_layer={s['n_layer']}",
            f"--model.n_head={s['n_head']}", f"--model.n_embd={s['n_embd']}",
            f"--data.block_size={s['block_size']}", f"--trainer.batch_size={s['batch_size']}",
            f"--trainer.max_iters={max_iters}", f"--trainer.num_workers={num_workers}",
            "--trainer.device=cpu"]
    return Prepared(work, argv, dict(s))


PREPARE = {"nanogpt": nanogpt, "word_language_model": word_language_model, "mingpt": mingpt}


if __name__ == "__main__":
    name, folder = sys.argv[1], Path(sys.argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    p = PREPARE[name](folder)
    print("cd", p.work, "&& python", " ".join(p.argv))
