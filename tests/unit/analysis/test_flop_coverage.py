"""flops.coverage (analysis/run/flop_coverage.py): shares worked by hand."""

from types import SimpleNamespace as Op

from trainprof.analysis.run.flop_coverage import flop_coverage


def test_an_uncounted_rnn_kernel_is_named_and_warned():
    ops = [Op(name="aten::mkldnn_rnn_layer", share_pct=45.0, metric="self_cpu"),
           Op(name="aten::addmm", share_pct=20.0, metric="self_cpu"),
           Op(name="aten::add_", share_pct=10.0, metric="self_cpu"),
           Op(name="aten::mm", share_pct=5.0, metric="self_cpu")]
    c = flop_coverage(["aten.addmm", "aten.mm"], ops)
    # counted: addmm 20 + mm 5 = 25%; seen 80%: 20% outside the top operators
    assert c.covered_pct == 25.0 and c.not_inspected_pct == 20.0
    assert [(u.name, u.kind) for u in c.uncovered] == [("aten::mkldnn_rnn_layer", "compute"),
                                                        ("aten::add_", "no FLOP convention")]
    assert "aten::mkldnn_rnn_layer (45.0%)" in c.warning and "45.0% of operator time" in c.warning
    # the parts add up: counted + uncounted + outside the top operators = all operator time
    assert c.covered_pct + sum(u.share_pct for u in c.uncovered) + c.not_inspected_pct == 100.0


def test_elementwise_leftovers_are_no_warning():
    ops = [Op(name="aten::mm", share_pct=70.0, metric="gpu"), Op(name="aten::gelu", share_pct=30.0, metric="gpu")]
    c = flop_coverage(["aten.mm"], ops)
    assert c.covered_pct == 70.0 and c.warning is None and c.metric == "gpu"
    assert flop_coverage(["aten.mm"], []) is None
