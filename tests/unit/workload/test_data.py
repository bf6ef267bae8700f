import torch
import pytest

from trainprof.errors import InputError
from trainprof.workload.data import RandomWindows, load_corpus, make_loader


def test_default_corpus_is_the_stdlib_with_a_held_out_split():
    c = load_corpus(max_bytes=2 * 1024 * 1024)
    assert c.source.startswith("python-stdlib") and c.n_files > 10
    assert c.train.dtype == torch.uint8
    total = len(c.train) + len(c.val)
    assert abs(len(c.val) / total - 0.1) < 0.02  # every 10th 64 KiB chunk
    assert b"def " in bytes(c.train[:200_000].tolist())  # real Python source


def test_data_file_and_folder(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("hello world " * 100)
    c = load_corpus(str(f))
    assert len(c.train) + len(c.val) == 1200 and c.n_files == 1
    (tmp_path / "b.bin").write_bytes(b"\x00\x01" * 100)  # binary: skipped
    c2 = load_corpus(str(tmp_path))
    assert c2.n_files == 1


@pytest.mark.parametrize("make", ["missing", "empty_dir", "binary_only"])
def test_bad_data_paths_are_input_errors(tmp_path, make):
    p = tmp_path / "x"
    if make == "empty_dir":
        p.mkdir()
    elif make == "binary_only":
        p.write_bytes(b"\x00" * 10)
    with pytest.raises(InputError) as e:
        load_corpus(str(p))
    assert str(p) in str(e.value) and e.value.exit_code == 2


def test_windows_are_deterministic_and_shifted_by_one():
    tokens = torch.arange(1000, dtype=torch.uint8)
    ds = RandomWindows(tokens, seq_len=8, n_samples=4, seed=3)
    x, y = ds[2]
    assert torch.equal(x[1:], y[:-1]) and x.dtype == torch.long
    assert torch.equal(ds[2][0], RandomWindows(tokens, 8, 4, 3)[2][0])
    assert not torch.equal(ds[2][0], RandomWindows(tokens, 8, 4, 4)[2][0])
    batches = list(make_loader(tokens, seq_len=8, micro_batch=2, n_batches=3, seed=0))
    assert len(batches) == 3 and batches[0][0].shape == (2, 8)


def test_too_small_corpus_for_the_sequence():
    with pytest.raises(InputError, match="--seq-len"):
        RandomWindows(torch.zeros(10, dtype=torch.uint8), seq_len=64, n_samples=1, seed=0)
