"""Links (kernel -> launch -> leaf op) and steps on the hand-written traces, and the
vectorised nesting against a brute-force stack definition."""

import random
from pathlib import Path

import numpy as np
import pytest

from trainprof.trace import Kind, find_steps, link, read_trace, step_of
from trainprof.trace.nesting import group_ids, innermost_containing, innermost_open, parents

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"


def _row(tr, name, nth=0):
    return int(np.flatnonzero(tr.name_id == tr.names.index(name))[nth])


@pytest.fixture(scope="module")
def two():
    tr = read_trace(DATA / "two_steps.json")
    return tr, link(tr)


def test_kernel_launch_and_leaf_op(two):
    tr, ln = two
    gemm, mm = _row(tr, "sm90_gemm_kernel"), _row(tr, "aten::mm")
    assert ln.launch[gemm] == _row(tr, "cudaLaunchKernel", 0)
    assert ln.op[gemm] == mm  # the innermost op, not aten::linear around it
    assert ln.op[_row(tr, "cudaLaunchKernel", 0)] == mm
    assert ln.op_parent[mm] == _row(tr, "aten::linear") and ln.op_parent[_row(tr, "aten::linear")] == -1
    memcpy = _row(tr, "Memcpy HtoD (Pinned -> Device)")
    assert ln.launch[memcpy] == _row(tr, "cudaMemcpyAsync") and ln.op[memcpy] == _row(tr, "aten::copy_")
    add = _row(tr, "add_kernel")
    assert ln.launch[add] == _row(tr, "cudaLaunchKernel", 1) and ln.op[add] == _row(tr, "aten::add")
    assert (ln.n_activities, ln.n_linked, ln.n_via_flow) == (3, 3, 0) and ln.linked_fraction == 1.0
    assert ln.launch[mm] == -1 and ln.op[_row(tr, "ProfilerStep#3")] == -1


def test_steps_cpu_intervals_and_gpu_extents(two):
    tr, ln = two
    s = find_steps(tr, ln)
    assert not s.pseudo and list(s.number) == [3, 4]
    assert list(s.row) == [_row(tr, "ProfilerStep#3"), _row(tr, "ProfilerStep#4")]
    assert list(s.cpu_start_us) == [1000.0, 1200.0] and list(s.cpu_end_us) == [1200.0, 1300.0]
    # step 3: gemm [1030, 1080] and memcpy [1160, 1170]; step 4: add_kernel [1290, 1330]
    assert list(s.gpu_start_us) == [1030.0, 1290.0] and list(s.gpu_end_us) == [1170.0, 1330.0]
    assert list(s.n_gpu_events) == [2, 1]
    assert list(s.cpu_dur_us) == [200.0, 100.0] and list(s.gpu_dur_us) == [140.0, 40.0]
    per_row = step_of(tr, ln, s)
    assert per_row[_row(tr, "add_kernel")] == 1 and per_row[_row(tr, "sm90_gemm_kernel")] == 0
    assert per_row[_row(tr, "aten::mm")] == -1


def test_legacy_links_and_an_op_free_launch():
    tr = read_trace(DATA / "legacy.json")
    ln = link(tr)
    k, memcpy, memset = _row(tr, "implicit_convolve_sgemm"), _row(tr, "Memcpy HtoD (Pageable -> Device)"), _row(tr, "Memset (Device)")
    assert ln.op[k] == _row(tr, "aten::conv2d")
    assert ln.launch[memcpy] == _row(tr, "cudaMemcpyAsync") and ln.op[memcpy] == -1  # launched outside any op
    assert ln.op[memset] == _row(tr, "aten::zero_")
    s = find_steps(tr, ln)
    assert list(s.number) == [1] and (s.gpu_start_us[0], s.gpu_end_us[0], s.n_gpu_events[0]) == (140.0, 192.0, 3)


def test_flow_fallback_driver_launch_and_pseudo_step():
    tr = read_trace(DATA / "edge_cases.json")
    ln = link(tr)
    triton = _row(tr, "triton_poi_fused_0", 1)  # the kernel; row 0 of that name is the cpu_op
    assert tr.kind[triton] == Kind.KERNEL and tr.correlation[triton] == -1
    assert ln.launch[triton] == _row(tr, "cuLaunchKernel")  # through the ac2g flow pair
    assert ln.op[triton] == _row(tr, "triton_poi_fused_0", 0)
    assert ln.launch[_row(tr, "Memcpy HtoD (Host -> Device)")] == _row(tr, "hipMemcpyWithStream")
    assert (ln.n_activities, ln.n_linked, ln.n_via_flow) == (4, 2, 1)
    s = find_steps(tr, ln)
    assert s.pseudo and list(s.number) == [-1]
    assert (s.cpu_start_us[0], s.cpu_end_us[0]) == (5.0, 105.0)  # the "custom" OTHER row does not count
    assert (s.gpu_start_us[0], s.gpu_end_us[0], s.n_gpu_events[0]) == (52.0, 96.0, 4)  # linked or not


def test_cpu_only_pseudo_step_has_no_gpu_extent(tmp_path):
    p = tmp_path / "cpu.json"
    p.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 3, "dur": 4}]}')
    tr = read_trace(p)
    s = find_steps(tr, link(tr))
    assert s.pseudo and (s.cpu_start_us[0], s.cpu_end_us[0]) == (3.0, 7.0)
    assert np.isnan(s.gpu_start_us[0]) and s.n_gpu_events[0] == 0


# ---------------------------------------------------------------- nesting vs a stack sweep
def _random_forest(rng, groups=3):
    g, s, e = [], [], []

    def fill(grp, lo, hi, depth):
        t = lo
        while t < hi and rng.random() < 0.8:
            a = t + rng.randint(0, 3)
            b = a + rng.randint(0, 20)
            if b > hi:
                break
            g.append(grp), s.append(a), e.append(b)
            if depth < 5 and b - a > 2:
                fill(grp, a, b, depth + 1)
            t = b + rng.randint(0, 2)

    for grp in range(groups):
        fill(grp, 0, 200, 0)
    idx = list(range(len(g)))
    rng.shuffle(idx)  # input order must not matter
    return np.array(g)[idx], np.array(s, float)[idx], np.array(e, float)[idx]


def _stack_parents(g, s, e):
    order = sorted(range(len(s)), key=lambda i: (g[i], s[i], -e[i]))
    out, stack, cur = np.full(len(s), -1), [], None
    for i in order:
        if g[i] != cur:
            stack, cur = [], g[i]
        while stack and e[stack[-1]] <= s[i]:
            stack.pop()
        out[i] = stack[-1] if stack else -1
        stack.append(i)
    return out


def test_parents_and_innermost_match_a_stack_sweep():
    rng = random.Random(7)
    for _ in range(100):
        g, s, e = _random_forest(rng)
        if not len(s):
            continue
        par = parents(g, s, e)
        assert np.array_equal(par, _stack_parents(g, s, e))
        qg = np.array([rng.randint(0, 2) for _ in range(40)])
        q = np.array([rng.randint(0, 200) + rng.choice([0.0, 0.5]) for _ in range(40)])
        got = innermost_containing(g, s, e, qg, q, par)
        for k in range(len(q)):
            inside = [i for i in range(len(s)) if g[i] == qg[k] and s[i] <= q[k] <= e[i]]
            if not inside:
                assert got[k] == -1
                continue
            c = got[k]
            assert c in inside
            # innermost: no other interval holding q lies strictly inside the answer (at a
            # boundary between siblings, [80, 85] and [85, 96] both hold 85; either is fine)
            assert not any(s[i] >= s[c] and e[i] <= e[c] and e[i] - s[i] < e[c] - s[c] for i in inside)


def test_innermost_open_on_positions_matches_brute_force():
    """Positions as depgraph numbers a thread's boundary nodes: group k's block is offset by
    k * 1000, so blocks never interleave. The answer for q is the innermost interval with
    start <= q < end: the one holding the piece (q, q + 1)."""
    rng = random.Random(11)
    for _ in range(100):
        g, s, e = _random_forest(rng)
        if not len(s):
            continue
        s, e = (s + 1000 * g).astype(np.int64), (e + 1000 * g).astype(np.int64)
        order = np.argsort(s * 10**6 + (10**6 - 1 - e), kind="stable")
        par = parents(g, s, e, order)
        q = np.array([rng.randint(0, 2) * 1000 + rng.randint(0, 200) for _ in range(40)], dtype=np.int64)
        got = innermost_open(order, s, e, par, q)
        for k in range(len(q)):
            holding = [i for i in range(len(s)) if s[i] <= q[k] < e[i]]
            if not holding:
                assert got[k] == -1
                continue
            # innermost = latest start; at equal starts the shorter (it nests in the longer)
            best = max(holding, key=lambda i: (s[i], -e[i]))
            assert (s[got[k]], e[got[k]]) == (s[best], e[best])


def test_group_ids():
    assert group_ids(np.array([3, 1, 3, 1, 2]), np.array([5, 5, 5, 6, 5])).tolist() == [3, 0, 3, 1, 2]
