"""`trainprof nsys-command`: the nsys line for our run and for a user's script."""

import json
import shlex

from trainprof.cli import main
from trainprof.cli.nsys import nsys_line


def test_our_run_gets_the_capture_range_and_nsys_capture():
    argv, notes = nsys_line(["trainprof", "run", "--preset", "gpt2-124m", "--profile"], "out/r", 3, whole=False)
    assert argv[:5] == ["nsys", "profile", "--trace=cuda,nvtx,osrt", "--sample=none", "--cpuctxsw=none"]
    assert "--capture-range=cudaProfilerApi" in argv and "--capture-range-end=stop" in argv
    assert "--output=out/r" in argv
    prog = argv[argv.index("--force-overwrite=false") + 1:]
    # --profile is dropped: torch.profiler and nsys both need CUPTI
    assert prog == ["trainprof", "run", "--preset", "gpt2-124m", "--nsys-capture", "--profile-steps", "3"]
    assert any("captures 3 steps" in n for n in notes)


def test_a_given_profile_steps_is_kept_and_reported():
    argv, notes = nsys_line(["python", "-m", "trainprof", "run", "--profile-steps=5"], "o", 3, whole=False)
    assert argv[-2:] == ["--profile-steps=5", "--nsys-capture"]
    assert any("captures 5 steps" in n for n in notes)


def test_a_user_script_is_told_to_bracket_its_steps_or_use_whole():
    argv, notes = nsys_line(["python", "train.py", "--lr", "3e-4"], "o", 3, whole=False)
    assert argv[-4:] == ["python", "train.py", "--lr", "3e-4"] and "--nsys-capture" not in argv
    assert any("torch.cuda.profiler.start()" in n for n in notes)
    argv, notes = nsys_line(["python", "train.py"], "o", 3, whole=True)
    assert not any(a.startswith("--capture-range") for a in argv)
    assert not any("torch.cuda.profiler.start()" in n for n in notes)


def test_cli_prints_a_shell_line_and_json(capsys):
    assert main(["nsys-command", "--output", "r/x", "--", "python", "my script.py"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert shlex.split(line)[-2:] == ["python", "my script.py"]  # quoted for the shell
    assert main(["nsys-command", "--json", "--output", "r/y"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["argv"][-4:] == ["run", "--nsys-capture", "--profile-steps", "3"] and shlex.split(d["command"]) == d["argv"]


def test_bad_steps_is_a_usage_error(capsys):
    assert main(["nsys-command", "--steps", "0"]) == 2
    assert "steps (--steps) must be ≥ 1, got 0" in capsys.readouterr().err


def test_nsys_capture_on_cpu_is_one_line(tmp_path, capsys):
    assert main(["run", "--device", "cpu", "--nsys-capture", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--nsys-capture needs a CUDA device" in err
    assert not (tmp_path / "r").exists()
