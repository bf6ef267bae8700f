"""Issue #19 end to end: no injection through printed commands, one line and exit 2 for
bad input or outputs, nothing overwritten or half-written."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
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


# ESC c (reset), ESC 7 / ESC 8 (save, restore the cursor), a DCS (ESC P ... ESC \\), BEL,
# the one-byte C1 CSI and DCS (U+009B, U+0090), a bidi override: issue #33's list
TERMINAL_ATTACK = "k\x1bc\x1b7\x1b8\x1bPq#0\x1b\\\x07\u009b2J\u0090x\u202eevil"
_RAW = __import__("re").compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]")  # any control but newline


def test_ncu_command_shows_control_characters_and_its_regex_still_matches(tmp_path, capsys):
    """Issue #33: ncu-command printed ESC c, ESC 7/8, DCS, BEL and U+009B raw inside its regex.
    Now each is its escape (also a regex escape, so ncu still finds the kernel), the trace
    path in the last command is $'...'-quoted, and nothing raw reaches the terminal."""
    import re
    import shlex

    trace = _trace_with_kernel(tmp_path, TERMINAL_ATTACK)
    odd = tmp_path / "t\x1b]0;x\x07.json"
    odd.write_bytes(trace.read_bytes())
    assert main(["ncu-command", str(odd), "--top", "3", "--program", "python train\x1bc.py"]) == 0
    printed = capsys.readouterr().out
    assert not _RAW.search(printed), repr(_RAW.search(printed))
    collect = next(ln for ln in printed.splitlines() if ln.startswith("ncu "))
    words = shlex.split(collect.replace("$'train\\x1bc.py'", "PROGRAM"))
    regex = words[words.index("--kernel-name") + 1].removeprefix("regex:")
    assert re.match(regex, TERMINAL_ATTACK)  # the escapes match the real name's characters
    again = next(ln for ln in printed.splitlines() if ln.startswith("trainprof analyze"))
    assert shlex.split(again.replace("$'", "'"))[2].endswith("t\\x1b]0;x\\x07.json")  # $'...' quoted: shown
    script = tmp_path / "pasted.sh"
    script.write_text(printed)
    subprocess.run(["bash", "-n", str(script)], check=True)  # still valid shell


def test_nsys_command_shows_control_characters(capsys):
    assert main(["nsys-command", "--", "python", "train\x1bc.py"]) == 0
    printed = capsys.readouterr().out
    assert not _RAW.search(printed) and "$'train\\x1bc.py'" in printed


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
    for cmd in (["analyze", str(TRACE)], ["diff", str(TRACE), str(TRACE)], ["memory", "--no-search", "--no-ladder"],
                ["bench", "bandwidth", "--device", "cpu"]):
        assert main([*cmd, "--out", str(out)]) == 2
        assert "--force" in _one_error_line(capsys.readouterr().err)
        assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]  # nothing written


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_force_replaces_only_what_trainprof_wrote(tmp_path, capsys):
    """Issue #33: `analyze T --out o --force` removed o/keep.txt and o/sub/keep2.txt."""
    out = tmp_path / "o"
    (out / "sub").mkdir(parents=True)
    (out / "keep.txt").write_text("the user's")
    (out / "sub" / "keep2.txt").write_text("the user's")
    for cmd in (["analyze", str(TRACE)], ["diff", str(TRACE), str(TRACE)]):
        assert main([*cmd, "--out", str(out), "--force"]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert "'keep.txt' (and 1 more), which trainprof did not write" in line and "nothing was removed" in line
        assert _files(out) == ["keep.txt", "sub", "sub/keep2.txt"]
    # a folder trainprof wrote is replaced by --force, through its manifest
    mine = tmp_path / "mine"
    assert main(["analyze", str(TRACE), "--out", str(mine), "--no-report"]) == 0
    assert _files(mine) == [".trainprof-manifest.json", "analysis.json"]
    assert main(["diff", str(TRACE), str(TRACE), "--out", str(mine), "--force"]) == 0
    assert _files(mine) == [".trainprof-manifest.json", "diff.json", "diff.md"]  # analysis.json was ours: gone
    # ... until the user puts a file of their own there
    (mine / "notes.md").write_text("the user's")
    assert main(["analyze", str(TRACE), "--out", str(mine), "--force"]) == 2
    assert "'notes.md'" in _one_error_line(capsys.readouterr().err)
    assert _files(mine) == [".trainprof-manifest.json", "diff.json", "diff.md", "notes.md"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_report_force_replaces_only_its_own_reports(tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    (out / "report.html").write_text("the user's page")
    assert main(["report", str(DATA / "reports" / "diff"), "--out", str(out), "--force"]) == 2
    assert "report.html was not written by trainprof" in _one_error_line(capsys.readouterr().err)
    assert (out / "report.html").read_text() == "the user's page"
    (out / "report.html").unlink()
    (out / "notes.md").write_text("the user's")
    assert main(["report", str(DATA / "reports" / "diff"), "--out", str(out), "--force"]) == 0
    assert main(["report", str(DATA / "reports" / "diff"), "--out", str(out), "--force"]) == 0  # ours: replaced
    assert (out / "notes.md").read_text() == "the user's"


@pytest.mark.parametrize("where", [".", "..", "HOME"])
def test_out_is_never_the_current_folder_its_parent_or_home(tmp_path, monkeypatch, capsys, where):
    cwd = tmp_path / "home" / "proj"
    cwd.mkdir(parents=True)
    (cwd / "train.py").write_text("# the user's work")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    where = str(tmp_path / "home") if where == "HOME" else where  # (the shell expands ~ before we see it)
    assert main(["analyze", str(TRACE), "--out", where, "--force"]) == 2
    assert "trainprof writes its output into a folder of its own" in _one_error_line(capsys.readouterr().err)
    assert (cwd / "train.py").exists() and _files(tmp_path / "home") == ["proj", "proj/train.py"]


@pytest.mark.parametrize("cmd", [
    ["analyze", str(TRACE)], ["diff", str(TRACE), str(TRACE)], ["report", str(DATA)],
    ["memory", "--no-search", "--no-ladder"], ["bench", "bandwidth", "--device", "cpu"],
    ["run", "--steps", "3"], ["tune", "--steps", "3"],
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


def test_plots_without_vl_convert_keep_the_analysis(tmp_path, monkeypatch, capsys):
    """--plots where vl-convert is missing (as on the H200 of 2026-11-28): the analysis folder is
    written whole, without the chart files, and a note says why; exit 0."""
    monkeypatch.setitem(sys.modules, "vl_convert", None)
    out = tmp_path / "o"
    assert main(["analyze", str(TRACE), "--out", str(out), "--peak-tflops", "100",
                 "--peak-bandwidth-gbs", "1000", "--plots"]) == 0
    assert (out / "analysis.json").exists() and not (out / "roofline.png").exists()
    assert "roofline.png/roofline.svg not written" in capsys.readouterr().err


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


@pytest.mark.parametrize("url", ["zip://trace.json::{zip}", "tar://trace.json::{zip}", "reference://trace.json",
                                 "jupyter://localhost/trace.json", "simplecache::memory://job/trace.json",
                                 "ftp://host/trace.json"])
def test_fsspec_protocols_we_do_not_test_are_refused(tmp_path, capsys, url):
    """Issue #33: zip://, tar://, reference://, jupyter:// reached fsspec and ended in
    BadZipFile/ReadError/TypeError tracebacks. Only local, file, s3, gs, http(s) and memory
    are accepted; the rest is one line, exit 2."""
    archive = tmp_path / "t.zip"
    archive.write_bytes(b"PK\x03\x04 not really a zip")
    assert main(["analyze", url.format(zip=archive)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "not accepted" in line and "memory://" in line, line


@pytest.mark.parametrize("scale, message", [
    (".=1e16", "the factor must be a number from 0 to 100"),  # it reported "projected 0.0 µs, gain 100%"
    ("gemm=101", "the factor must be a number from 0 to 100"),
    (r"(a)\1=0.5", "not a pattern RE2 accepts"),
    ("(?=gemm)=0.5", "not a pattern RE2 accepts"),
])
def test_whatif_scale_factor_and_pattern_are_checked(capsys, scale, message):
    assert main(["whatif", str(TRACE), "--scale", scale]) == 2
    assert message in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("pattern", ["^(a+)+$", "^(a|a)*$"])
def test_whatif_backtracking_patterns_cannot_hang(tmp_path, pattern):
    """Issue #33: `(a+)+$` against a long name that does not match took Python's re 2^n
    steps. RE2 matches in linear time: the command ends (the timeout only guards a hang)."""
    import sys

    trace = _trace_with_kernel(tmp_path, "a" * 64 + "!")  # 2^64 backtracking steps for re
    r = subprocess.run([sys.executable, "-m", "trainprof", "whatif", str(trace), "--scale", f"{pattern}=0.5",
                        "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    scenario = next(s for s in json.loads(r.stdout)["scenarios"] if s["label"].startswith("scale"))
    assert scenario["edges_changed"] == 0  # no name is all a's (the planted one ends in '!')


@pytest.mark.parametrize("limit, message", [
    ("1e400", "more than 1 EiB"),  # an OverflowError traceback
    ("1e9999999999", "more than 1 EiB"),  # hung computing 10 ** 9999999999
    ("1e-9999999999", "must be at least 1 byte"),
])
def test_memory_limit_with_a_huge_exponent_is_one_line(tmp_path, capsys, limit, message):
    assert main(["memory", "--device", "cpu", "--memory-limit", limit, "--out", str(tmp_path / "m")]) == 2
    assert message in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "m").exists()


# ----------------------------------------------------------------------------- Ray engine
RANKS = DATA / "traces" / "real" / "hta_recsys_128rank_nccl_a100"
RAY_TIMEOUT = ("The current node timed out during startup. This could happen because some of the raylet "
               "failed to startup or the GCS has become overloaded.")  # ray/_private/node.py, a bare Exception


def _fake_ray(monkeypatch, init):
    ray = pytest.importorskip("ray", reason="the [cluster] extra (ray) is not installed")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr(ray, "init", init)
    return ray


def test_a_ray_start_up_timeout_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """Issue #33: on a busy machine Ray's start-up timed out: a traceback, exit 1. Now the
    start is retried within --ray-start-timeout, then refused naming both ways out."""
    calls = []

    def init(*a, **k):
        calls.append(k)
        raise Exception(RAY_TIMEOUT)  # the type Ray raises  # noqa: TRY002

    _fake_ray(monkeypatch, init)
    out = tmp_path / "o"
    assert main(["analyze", str(RANKS), "--engine", "ray", "--ray-start-timeout", "0", "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "did not start within --ray-start-timeout 0 s" in line and "--engine local" in line, line
    assert len(calls) == 1 and not out.exists() and not list(tmp_path.iterdir())
    # with time to spare, a timed-out start is tried again (here: the second start goes)
    calls.clear()

    def slow_then_up(*a, **k):
        calls.append(k)
        if len(calls) == 1:
            raise Exception(RAY_TIMEOUT)  # noqa: TRY002
        raise ConnectionError("stop here: the retry happened")

    _fake_ray(monkeypatch, slow_then_up)
    assert main(["analyze", str(RANKS), "--engine", "ray", "--ray-start-timeout", "600"]) == 2
    assert "stop here" in _one_error_line(capsys.readouterr().err) and len(calls) == 2


def test_a_lost_ray_worker_is_one_line(monkeypatch, capsys):
    ray = _fake_ray(monkeypatch, lambda *a, **k: None)

    class Task:
        def remote(self, *a):
            return a

    monkeypatch.setattr(ray, "remote", lambda **k: lambda fn: Task())

    def get(refs):
        raise ray.exceptions.WorkerCrashedError()

    monkeypatch.setattr(ray, "get", get)
    monkeypatch.setattr(ray, "wait", lambda refs, **k: (refs, []))  # all done: the loss shows in ray.get
    assert main(["analyze", str(RANKS), "--engine", "ray"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "lost a Ray worker or node (WorkerCrashedError" in line and "--engine local" in line, line


def test_sigterm_during_a_ray_map_reaches_the_command_and_ray_is_shut_down(monkeypatch):
    """#45: SIGTERM to `analyze --engine ray` was exit 1 with a C++ stack dump: ray.init had
    replaced the command's handler (ray._private.utils.set_sigterm_handler: sys.exit(1)), and
    Ray's wait wraps a handler's exception in a SystemError. A fake Ray does both (a real
    start costs ~10 s here; by hand on 8 ranks: rc 143, one line, no Ray process left). The
    handler here stands in for cli.Terminated, whose exit is the process's own death."""
    import signal

    from trainprof.jobs import engines

    class Stop(BaseException):
        pass

    def ours(signum, frame):
        raise Stop()

    def init(*a, **k):  # what ray.init does to SIGTERM: a Python handler, then the core worker's C++ one
        ray._private.utils.set_sigterm_handler(lambda signum, frame: sys.exit(1))
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def wait(refs, num_returns, timeout):
        try:
            signal.raise_signal(signal.SIGTERM)  # runs whatever handler is installed now
        except Stop as e:
            raise SystemError("<built-in method __new__> returned a result with an exception set") from e
        return [], refs

    ray = _fake_ray(monkeypatch, init)
    setter = ray._private.utils.set_sigterm_handler
    shutdowns = []
    monkeypatch.setattr(ray, "shutdown", lambda: shutdowns.append(1))
    monkeypatch.setattr(ray, "remote", lambda **k: lambda fn: type("T", (), {"remote": lambda self, *a: a})())
    monkeypatch.setattr(ray, "wait", wait)
    before = signal.signal(signal.SIGTERM, ours)
    try:
        with pytest.raises(Stop):
            engines.run_map(print, [(1,), (2,)], engines.EngineConfig("ray"))
        assert signal.getsignal(signal.SIGTERM) is ours
    finally:
        signal.signal(signal.SIGTERM, before)
    assert shutdowns == [1] and ray._private.utils.set_sigterm_handler is setter


@pytest.mark.parametrize("address, why", [("nonsense", "expected auto, HOST:PORT"), ("127.0.0.1:{port}",
                                          "connection refused"), ("ray://127.0.0.1:{port}", "connection refused")])
def test_a_bad_ray_address_is_one_line_without_calling_ray(monkeypatch, capsys, address, why):
    """ray.init on an unreachable address printed C++ warnings for minutes; the address is
    checked (form, then a TCP connect) before Ray is asked."""
    import socket

    def init(*a, **k):
        raise AssertionError("ray.init must not be reached")

    _fake_ray(monkeypatch, init)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["analyze", str(RANKS), "--engine", "ray", "--ray-address", address.format(port=port)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert why in line and "--ray-address" in line, line


def _answering(reply: bytes):
    """A listening socket on 127.0.0.1 whose connections get `reply` (none: accepted by the
    kernel's backlog and left silent), and a thread serving it; close the socket to end it."""
    import socket
    import threading

    srv = socket.create_server(("127.0.0.1", 0))

    def serve():
        try:
            while True:
                conn, _ = srv.accept()
                conn.recv(64)
                conn.sendall(reply)
                conn.close()
        except OSError:  # the socket closed: the test is over
            pass

    if reply:
        threading.Thread(target=serve, daemon=True).start()
    return srv


@pytest.mark.parametrize("reply, why", [(b"", "no gRPC handshake in 0.3 s"),
                                        (b"HTTP/1.0 400 Bad request\r\n\r\n", "an HTTP/1 server, not gRPC"),
                                        (b"<!DOCTYPE HTML>\n<html>", "not with a gRPC handshake"),  # python -m http.server
                                        (b"+OK", "closed the connection without a gRPC handshake")])
def test_an_open_port_that_is_not_ray_is_one_line_without_calling_ray(monkeypatch, capsys, reply, why):
    """#45: an open port that is not Ray (a silent socket, a web server) kept ray.init retrying
    inside C++ for minutes, deaf to SIGTERM; the port is asked for a gRPC handshake first."""
    from trainprof.jobs import engines

    def init(*a, **k):
        raise AssertionError("ray.init must not be reached")

    _fake_ray(monkeypatch, init)
    monkeypatch.setattr(engines, "CONNECT_CHECK_S", 0.3)
    with _answering(reply) as srv:
        port = srv.getsockname()[1]
        assert main(["analyze", str(RANKS), "--engine", "ray", "--ray-address", f"127.0.0.1:{port}"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "is open but is not a Ray head" in line and why in line and "--engine local" in line, line


def test_a_grpc_server_passes_the_ray_address_check(monkeypatch):
    """The check's other side: a gRPC server (what Ray's GCS and Ray Client server are) passes."""
    grpc = pytest.importorskip("grpc", reason="grpcio comes with the [cluster] extra (ray)")
    from concurrent.futures import ThreadPoolExecutor

    from trainprof.jobs import engines

    monkeypatch.delenv("RAY_USE_TLS", raising=False)
    server = grpc.server(ThreadPoolExecutor(1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        engines.check_address(f"127.0.0.1:{port}")
        engines.check_address(f"ray://127.0.0.1:{port}")
    finally:
        server.stop(None)
    with _answering(b"") as srv:  # with RAY_USE_TLS a head answers in TLS: only the connect is checked
        monkeypatch.setenv("RAY_USE_TLS", "1")
        engines.check_address(f"127.0.0.1:{srv.getsockname()[1]}")


def test_force_on_an_out_that_is_a_symlink_is_refused_before_anything_is_removed(tmp_path, capsys):
    """#45: `--out LINK --force` where LINK points at an earlier output: one line, exit 2, and
    not even a killed command's temp files are removed through the link."""
    real = tmp_path / "real"
    assert main(["analyze", str(TRACE), "--out", str(real), "--no-report"]) == 0
    stale = real / ".analysis.json.999999999.x.tmp"  # a dead writer's temp file: cleaned when it is ours
    stale.write_text("")
    link = tmp_path / "link"
    link.symlink_to(real)
    capsys.readouterr()
    assert main(["analyze", str(TRACE), "--out", str(link), "--force", "--no-report"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "is a symbolic link" in line and "nothing was removed" in line
    assert stale.exists() and (real / "analysis.json").exists()
