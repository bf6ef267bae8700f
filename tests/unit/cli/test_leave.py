"""The `trainprof` command leaves without the interpreter's teardown (cli._leave) only when
that loses nothing: the exit code kept, atexit callbacks run, stdout flushed; with another
thread alive, the usual exit, which waits for it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(body: str, tmp_path) -> subprocess.CompletedProcess:  # noqa: ANN001
    code = textwrap.dedent("""
        import atexit, sys, threading, time
        from pathlib import Path
        from trainprof.cli import _leave
        out = Path(sys.argv[1])
        atexit.register(lambda: (out / "atexit").write_text("ran"))
        print("printed, not yet flushed", end="")
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)


def test_alone_it_keeps_the_code_the_callbacks_and_the_output(tmp_path):
    r = _run("_leave(3)\n", tmp_path)
    assert r.returncode == 3 and r.stdout == "printed, not yet flushed"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_with_a_thread_alive_the_usual_exit_waits_for_it(tmp_path):
    r = _run("""
        def late():
            time.sleep(0.3)
            (out / "thread").write_text("done")
        threading.Thread(target=late).start()
        _leave(0)
    """, tmp_path)
    assert r.returncode == 0 and (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "ran" and r.stdout == "printed, not yet flushed"
