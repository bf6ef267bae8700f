"""The host's Python stacks, as py-spy sampled them over the profiled window.

Input: py-spy's `raw` (collapsed-stack, flamegraph.pl) output, one line per distinct stack:
`frame;frame;...;frame COUNT`, outermost first, each frame `function (file:line)` (py-spy
src/sampler.rs + flamegraph output; `--native` adds C/C++ frames without a file, `--threads`
a leading `thread (0x…)` frame). A sample is one stack at one instant, so a share of samples
is a share of wall time over the window (sampling error ~ √(p(1−p)/n)).

Two views: *self* (the innermost frame: where the CPU is), and *total* of user code (every
frame outside torch, the standard library and built-ins, once per sample: the call that holds
the step, e.g. a collate function or a metrics loop). Self is the innermost *user* frame:
the torch op a user function calls counts for that function. Frames that wait (sleep, lock
acquire, select/poll, a queue's get) are idle time, counted apart; py-spy leaves out samples
of idle threads unless run with --idle, so shares are of the host's active samples.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from trainprof.analysis.timeline.callsite import is_user_frame
from trainprof.errors import InputError
from trainprof.recordtypes.modules import HostFunction, HostStacks

TOP = 8  # functions listed per view; a finding quotes the first three
# A function on (nearly) every sample is the program's own frame (<module>, main, the
# training loop, a test runner): true of any step, so not what holds it. The inclusive view
# lists the functions below them.
OUTER_PCT = 95.0
_LINE = re.compile(r"^(?P<stack>.*) (?P<count>\d+)$")
_FRAME = re.compile(r"^(?P<func>.+?) \((?P<file>[^()]*?):(?P<line>\d+)\)$")
_THREAD = re.compile(r"^(thread|process) \(")
# the innermost frames of a host that is waiting, not working (py-spy marks idle frames only
# with --idle; names cover threading, time.sleep, selectors and queues)
_WAITS = re.compile(r"^(wait|sleep|select|poll|epoll_wait|_wait_for_tstate_lock|acquire|get|recv_into|"
                    r"_recv|_poll|read|accept|join)\b")


def sibling(trace_path: str | Path) -> Path:
    """Where py-spy's output for a trace lives: beside it, `trace.json.gz` → `trace.py_spy.txt`."""
    p = Path(trace_path)
    name = p.name
    for ext in (".gz", ".json"):
        name = name.removesuffix(ext)
    return p.with_name(name + ".py_spy.txt")


def _as_user(frame: str) -> str | None:
    """`func (file)` for a user frame, else None. A frame's line is where that call stood at
    the sample (main:25 and main:26 are one function), so functions are keyed without it.
    callsite.is_user_frame speaks Kineto's `path(line): func`; py-spy writes `func (path:line)`."""
    m = _FRAME.match(frame)
    if m is None or not is_user_frame(f"{m['file']}({m['line']}): {m['func']}"):
        return None
    return f"{m['func']} ({m['file']})"


def parse_raw(text: str, source: str = "py-spy output") -> HostStacks:
    """HostStacks of py-spy's raw output; InputError (one line) when no line parses."""
    stacks: list[tuple[list[str], int]] = []
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m is None or not m["stack"]:
            continue
        frames = m["stack"].split(";")
        stacks.append((frames, int(m["count"])))
    n = sum(c for _, c in stacks)
    if not n:
        raise InputError(f"{source}: no py-spy samples (expected raw lines 'frame;frame COUNT')")
    selfc: Counter[str] = Counter()
    total: Counter[str] = Counter()
    threads: set[str] = set()
    idle = 0
    for frames, c in stacks:
        if frames and _THREAD.match(frames[0]):
            threads.add(frames[0])
            frames = frames[1:]
        if not frames:
            continue
        leaf = frames[-1]
        if _WAITS.match(leaf):
            idle += c
            continue
        user = [u for f in frames if (u := _as_user(f)) is not None]
        if user:
            selfc[user[-1]] += c  # the innermost user frame: the line a user can change
        for f in dict.fromkeys(user):  # once per sample, outermost first: a set's order is the string
            total[f] += c              # hash's (PYTHONHASHSEED), and ties in top_total flipped run to run
    def rows(counter: Counter[str], key: str) -> list[HostFunction]:
        out = []
        ranked = counter.most_common() if key == "self" else [
            (f, c) for f, c in counter.most_common() if 100.0 * c / n < OUTER_PCT]
        for f, c in ranked[:TOP]:
            pct = round(100.0 * c / n, 2)
            out.append(HostFunction(function=f, self_pct=pct if key == "self" else round(100.0 * selfc[f] / n, 2),
                                    total_pct=round(100.0 * total[f] / n, 2)))
        return out
    top_self = rows(selfc, "self")
    assert sum(r.self_pct for r in top_self) <= 100.0 + 0.01 * TOP
    assert all(r.self_pct <= r.total_pct + 1e-9 for r in top_self)
    return HostStacks(samples=n, threads=max(1, len(threads)), idle_pct=round(100.0 * idle / n, 2),
                      top_self=top_self, top_total=rows(total, "total"))


def read_host_stacks(trace_path: str | Path) -> HostStacks | None:
    """The py-spy samples beside a trace, or None when there are none."""
    p = sibling(trace_path)
    try:
        text = p.read_text("utf-8", "replace")
    except OSError:
        return None
    return parse_raw(text, str(p))
