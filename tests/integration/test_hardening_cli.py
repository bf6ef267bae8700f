"""Issue #19 end to end: no injection through printed commands, one line and exit 2 for
bad input or outputs, nothing overwritten or half-written."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from trainprof.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "traces" / "idle_causes.json"
INJECT = "k'; touch PWNED; echo '"
ESC_NAME = "\x1b]0;owned\x07\x1b[2Jaten::evil"


def _trace_with_kernel(tmp_path: Path, kernel: str, op: str = "aten::mm") -> Path:
    """idle_causes.json with its longest kernel and one op renamed."""
    d = json.loads(TRACE.read_text())
    for e in d["traceEvents"]:
        if e.get("name") == "ampere_sgemm_128x64_nn":
            e["name"] = kernel
        elif e.get("cat") == "cpu_op" and e.get("name") == "aten::mm":
            e["name"] = op
    p = tmp_path / "evil trace's.json"  # a space and a quote in the path too
    p.write_text(json.dumps(d))
    return p


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("trainprof: error: "), err
    assert "Traceback" not in err
    return lines[0]


# ----------------------------------------------------------------------------- injection
def test_ncu_command_cannot_inject(tmp_path, capsys):
    trace = _trace_with_kernel(tmp_path, INJECT)
    assert main(["ncu-command", str(trace), "--top", "3"]) == 0
    printed = capsys.readouterr().out
    assert INJECT in printed.replace("\\", "") or "PWNED" in printed  # the name is there, quoted
    script = tmp_path / "pasted.sh"
    script.write_text(printed)
    # 1. the pasted lines are valid shell
    subprocess.run(["bash", "-n", str(script)], check=True)
    # 2. run them with stub `ncu` and `trainprof` that only record their argv: if the
    #    kernel name broke out of its quotes, `touch PWNED` would run in `work`
    work = tmp_path / "work"
    work.mkdir()
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("ncu", "trainprof", "python"):
        stub = stubs / name
        stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@" >> "$STUB_LOG"\n')
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "STUB_LOG": str(tmp_path / "argv.log")}
    subprocess.run(["bash", str(script)], cwd=work, env=env, check=True)
    assert not (work / "PWNED").exists()
    logged = (tmp_path / "argv.log").read_text().splitlines()
    # the regex argument reached ncu whole (re.escape'd name, prefix of 60 characters)
    assert any(a.startswith("regex:^(") and "PWNED" in a for a in logged)
    # the trace path with a space and a quote reached `trainprof analyze` as one argument
    assert str(trace) in logged


def test_ncu_command_program_is_split_as_shell_words(tmp_path, capsys):
    assert main(["ncu-command", str(TRACE), "--program", "python 'my train.py' --lr 3e-4"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("ncu --target"))
    assert line.endswith("-- python 'my train.py' --lr 3e-4")
    assert main(["ncu-command", str(TRACE), "--program", "python 'unclosed"]) == 2
    assert "--program" in _one_error_line(capsys.readouterr().err)


def test_tune_reproduce_command_is_quoted():
    from trainprof.tune.reference import command

    cmd = command({"preset": "tiny", "data": "my data/it's.txt"})
    assert cmd == "trainprof run --data 'my data/it'\"'\"'s.txt' --preset tiny"


# ----------------------------------------------------------------------------- terminal escapes
def test_control_characters_in_names_are_shown_not_sent(tmp_path, capsys):
    trace = _trace_with_kernel(tmp_path, "k\x1b[2J\x07", op=ESC_NAME)
    out = tmp_path / "o"
    assert main(["analyze", str(trace), "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr()
    assert "\x1b]" not in printed.out and "\x07" not in printed.out and "\x1b[2J" not in printed.out
    assert "\\x1b]0;owned\\x07" in printed.out
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for text in (md, html):
        assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;owned\\x07" in md and "\\x1b]0;owned\\x07" in html


# ----------------------------------------------------------------------------- inputs
@pytest.mark.parametrize("cmd", [["analyze"], ["diff", str(TRACE)], ["ncu-command"]])
def test_bad_inputs_are_one_line_and_exit_2(tmp_path, capsys, cmd):
    deep = tmp_path / "deep.json"
    deep.write_text('{"traceEvents": [{"ph": "X", "args": {"a": ' + "[" * 3000 + "]" * 3000 + "}}]}")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "\xff", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]}')
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for bad, words in [(deep, "nested"), ("/dev/zero", "not a regular file"), (fifo, "FIFO"),
                       (loop, "symbolic link"), (tmp_path / "none.json", "no such file")]:
        assert main([*cmd, str(bad)]) == 2, bad
        line = _one_error_line(capsys.readouterr().err)
        assert str(bad) in line and words in line, line
    if cmd == ["analyze"]:  # a bad name is a warning, not an error
        assert main(["analyze", str(latin), "--json"]) == 0
        assert "invalid UTF-8" in capsys.readouterr().out


def test_ncu_csv_is_bounded(tmp_path, capsys):
    assert main(["analyze", str(TRACE), "--ncu", "/dev/zero"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "--ncu /dev/zero" in line and "not a regular file" in line
    huge = tmp_path / "huge.csv"
    huge.write_text('"Kernel Name","' + "x" * 200_000 + '"\n')  # one field over csv's limit
    assert main(["analyze", str(TRACE), "--ncu", str(huge)]) == 2
    assert "--ncu" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("flag", ["--peak-tflops", "--peak-bandwidth-gbs"])
@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_non_finite_peaks_are_refused(capsys, flag, value):
    assert main(["analyze", str(TRACE), flag, value]) == 2
    assert flag in _one_error_line(capsys.readouterr().err)


def test_bench_empty_sizes_is_an_error(capsys):
    assert main(["bench", "bandwidth", "--sizes", "", "--device", "cpu"]) == 2
    assert "--sizes" in _one_error_line(capsys.readouterr().err)


def test_folder_of_unrelated_traces_warns_about_duplicate_ranks(tmp_path, capsys):
    for n in ("a.json", "b.json"):
        shutil.copy(DATA / "traces" / "two_steps.json", tmp_path / n)
    assert main(["analyze", str(tmp_path), "--json", "--jobs", "1"]) == 0
    cap = capsys.readouterr()
    assert "2 traces claim rank" in cap.err
    assert json.loads(cap.out)["multi_rank"]["warnings"]


# ----------------------------------------------------------------------------- outputs
def test_existing_non_empty_out_is_refused_unless_force(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    for cmd in (["analyze", str(TRACE)], ["diff", str(TRACE), str(TRACE)]):
        assert main([*cmd, "--out", str(out)]) == 2
        assert "--force" in _one_error_line(capsys.readouterr().err)
        assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]  # nothing written
    assert main(["diff", str(TRACE), str(TRACE), "--out", str(out), "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["diff.json", "diff.md"]  # replaced whole
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


@pytest.mark.parametrize("cmd", [
    ["analyze", str(TRACE)], ["diff", str(TRACE), str(TRACE)], ["report", str(DATA)],
    ["memory", "--no-search", "--no-ladder"], ["bench", "bandwidth", "--device", "cpu"],
    ["run", "--steps", "2"], ["tune", "--steps", "3"],
])
def test_out_whose_parent_is_a_file_fails_before_any_work(tmp_path, capsys, cmd):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main([*cmd, "--out", str(blocker / "sub" / "out")]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "--out" in line and "is a file" in line, line


def test_outputs_get_the_usual_mode(tmp_path):
    out = tmp_path / "o"
    old = os.umask(0o022)
    try:
        assert main(["analyze", str(TRACE), "--out", str(out), "--peak-tflops", "100",
                     "--peak-bandwidth-gbs", "1000", "--plots"]) == 0
    finally:
        os.umask(old)
    for p in out.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p  # 0666 & ~022, not mkstemp's 0600
    assert (out / "roofline.png").exists()


def test_stale_partials_of_dead_processes_are_cleaned(tmp_path):
    from trainprof import atomic

    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    stale = tmp_path / f".o.{dead.pid}.abc123.partial"
    stale.mkdir()
    (stale / "analysis.json").write_text("{}")
    mine = tmp_path / f".o.{os.getpid()}.xyz.partial"  # a live process's: left alone
    mine.mkdir()
    with atomic.staged_dir(tmp_path / "o") as stage:
        (stage / "x").write_text("1")
    assert not stale.exists() and mine.exists() and (tmp_path / "o" / "x").exists()


def test_enospc_while_writing_is_one_line(tmp_path, monkeypatch, capsys):
    import errno

    from trainprof import atomic

    real = os.replace

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", full)
    out = tmp_path / "o"
    assert main(["analyze", str(TRACE), "--out", str(out), "--no-plots", "--no-report"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "no space left" in line
    monkeypatch.setattr(atomic.os, "replace", real)
    assert not out.exists() and not list(tmp_path.iterdir())  # nothing half-written


def test_control_characters_in_diff_md_and_whatif(tmp_path, capsys):
    trace = _trace_with_kernel(tmp_path, "k\x1b[2J", op=ESC_NAME)
    out = tmp_path / "d"
    assert main(["diff", str(TRACE), str(trace), "--out", str(out), "--top", "50"]) == 0
    printed = capsys.readouterr().out
    md = (out / "diff.md").read_text()
    for text in (printed, md):
        assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;owned\\x07" in printed  # the renamed op is in the terminal's per-op table
    assert main(["whatif", str(trace), "--top", "50"]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\x07" not in printed
