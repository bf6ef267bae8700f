"""What-if re-timing on the hand-written traces of test_critical_path.py, worked on paper."""

import pytest

from trainprof.analysis.graph.depgraph import build_graph
from trainprof.analysis.graph.whatif import Edit, parse_remove, parse_scale, project, standard_whatifs
from trainprof.errors import UsageError
from tests.plain import plain
from tests.unit.analysis.test_critical_path import collective_events, context, ev, sync_trace  # noqa: F401


def run(ctx, *edits, **kw):
    return plain(project(ctx, build_graph(ctx), list(edits), **kw))  # as `trainprof whatif --json` writes it


def test_nothing_changed_projects_the_measured_time(sync_trace):
    p = run(sync_trace, Edit("remove", "data_loading"))
    assert p["edges_changed"] == 0
    # the step is the span of its GPU work (issue #39 item 2): gemm 40 → add's end 640
    assert p["measured_step_us"] == p["projected_step_us"] == 600 and p["gain_pct"] == 0


def test_remove_host_sync(sync_trace):
    from trainprof.analysis.graph.whatif import edited_weights, retime

    p = run(sync_trace, Edit("remove", "host_sync"))
    # The host no longer waits in cudaStreamSynchronize [210,650]: the CPU range ends at
    # 1000 − 440 = 560. The step is its GPU span (gemm 40→540, add 540→640), which the
    # sync after it does not hold: 600 before and after (before issue #39 the one step ran
    # to its ProfilerStep's end, 1000 → 640; that host tail belongs to the next step).
    assert p["steps"] == [{"step": 1, "measured_us": 600, "projected_us": 600}]
    assert p["gain_pct"] == 0
    g = build_graph(sync_trace)
    end = int(g.t_us.argmax())  # the ProfilerStep's end
    w, _ = edited_weights(sync_trace, g, [Edit("remove", "host_sync")])
    assert retime(g, w)[end] == 560


def test_remove_exposed_comm_and_scale_a_kernel(tmp_path):
    ctx = context(tmp_path, collective_events())
    # The step is its GPU span: gemm 100→300, all-reduce 300→600, add 600→700 = 600.
    # All-reduce takes 0: it ends at 300 with the gemm; the add (which waits for it) runs
    # 300→400: 100→400 = 300.
    assert run(ctx, Edit("remove", "exposed_comm"))["projected_step_us"] == 300
    # gemm × 0.5: gemm 100→200; the all-reduce waits for it (launch 45 + L 80 = 125 is
    # earlier), runs 200→500, add 500→600: 500.
    p = run(ctx, parse_scale("sgemm=0.5"))
    assert p["projected_step_us"] == 500 and p["edges_changed"] == 1
    # both: all-reduce 200→200; the add waits for it (its own launch, 56 + 80 = 136, is
    # earlier) and runs 200→300: 200
    assert run(ctx, parse_scale("sgemm=0.5"), Edit("remove", "exposed_comm"))["projected_step_us"] == 200


def test_remove_data_loading_on_cpu_steps(tmp_path):
    events = []
    for i, t0 in enumerate((0, 100)):
        events += [ev(f"ProfilerStep#{i + 1}", "user_annotation", t0, 100),
                   ev("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", t0, 30),
                   ev("aten::mm", "cpu_op", t0 + 30, 60)]
    ctx = context(tmp_path, events)
    p = run(ctx, Edit("remove", "data_loading"), with_path=True)
    # each steady step loses its 30 µs DataLoader wait: 100 → 70; the step time is the mean
    # period after the first step (step 2 only here), which the edit does not touch (issue #39)
    assert [(s["measured_us"], s["projected_us"]) for s in p["steps"]] == [(100, 100), (100, 70)]
    # --step 1: the edit applies from step 1 on
    assert [(s["measured_us"], s["projected_us"]) for s in run(ctx, Edit("remove", "data_loading"),
                                                                step=1)["steps"]] == [(100, 70)]
    assert (p["measured_step_us"], p["projected_step_us"], p["gain_pct"]) == (100, 70, 30)
    # the path after the edit is the op and the step's own time, no data loading left
    assert p["steps"][1]["critical_path_after"]["share_pct"] == {"cpu_op": 100.0}
    # scaling the op by 0.5 instead: 30 + 30 + 10 = 70 as well
    assert run(ctx, parse_scale("aten::mm=0.5"))["projected_step_us"] == 70
    assert run(ctx, Edit("remove", "launch_overhead"))["edges_changed"] == 0


def test_standard_whatifs_block(sync_trace):
    block = plain(standard_whatifs(sync_trace, build_graph(sync_trace)))
    got = {s["label"]: s["projected_step_us"] for s in block["scenarios"]}
    # The step is its GPU span (600: gemm 500 + add 100 on stream 7), which no removal
    # shortens: launch overhead only starts the gemm earlier (at 20: 20→520, add 520→620),
    # the sync and the host work after it lie past the span (issue #39 item 2; before, the
    # one step ran to its ProfilerStep's end: 1000, host_sync 640, launch_overhead 980).
    assert got == {"remove data_loading": 600, "remove host_sync": 600, "remove exposed_comm": 600,
                   "remove launch_overhead": 600, "remove allocator": 600}
    by = {s["label"]: s for s in block["scenarios"]}
    # floor: stream 7 runs the gemm (500) and the add (100), stream 8 one add (100): 600 µs
    assert {s["floor_us"] for s in block["scenarios"]} == {600}
    # removed by `remove host_sync`: the cudaStreamSynchronize call [210, 650] inside the
    # steady window [0 (the step's CPU start), 640] = 430 µs; the bound is min(430, 600 − 600
    # (the floor)) = 0%, and so is the gain
    hs = by["remove host_sync"]
    assert (hs["removed_us"], hs["bound_pct"], hs["gain_pct"]) == (430, 0, 0)
    # launch overhead: launch calls 20-30, 70-80, 100-110 and each launch edge's latency L = 20
    # from its call's start (20-40, 70-90, 100-120); their union = 60 µs removed; bound 0%
    lo = by["remove launch_overhead"]
    assert (lo["removed_us"], lo["bound_pct"], lo["gain_pct"]) == (60, 0, 0)
    assert all(s["violations"] == [] and s["gain_pct"] <= s["bound_pct"] for s in block["scenarios"])


@pytest.mark.parametrize("bad", ["gemm", "=0.5", "gemm=x", "gemm=-1", "gemm=inf", "(=0.5"])
def test_bad_scale_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="--scale"):
        parse_scale(bad)


def test_bad_remove_is_a_usage_error():
    with pytest.raises(UsageError, match="--remove gpu: must be one of data_loading, host_sync"):
        parse_remove("gpu")


def test_unknown_step_is_a_usage_error(sync_trace):
    with pytest.raises(UsageError, match="--step 7: no such step in the trace \\(steps: 1\\)"):
        run(sync_trace, Edit("remove", "host_sync"), step=7)


def test_scale_takes_only_pieces_inside_the_op_at_epoch_microseconds(tmp_path):
    """At epoch-µs magnitudes float64 steps are 0.25 µs: the 0.25 µs piece right after the op
    has its time midpoint on the op's end (a tie, rounded to even). It is the step's own
    time, not the op's: scaling the op to 0 saves the op's 60 µs, not 60.25."""
    t = 1712195495519680.0
    assert (t + 70.0) + 0.125 == t + 70.0  # the piece's midpoint, as the old test computed it
    events = [ev("ProfilerStep#1", "user_annotation", t, 100), ev("aten::mm", "cpu_op", t + 10, 60),
              ev("aten::add", "cpu_op", t + 70.25, 19.75),
              ev("ProfilerStep#2", "user_annotation", t + 100, 100), ev("aten::mm", "cpu_op", t + 110, 60)]
    p = run(context(tmp_path, events), parse_scale("aten::mm=0"))
    assert [(s["measured_us"], s["projected_us"]) for s in p["steps"]] == [(100, 100), (100, 40)]
