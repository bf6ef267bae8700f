"""report.md, report.html and the terminal show the flowchart's path and the references from
one planted record: busy 95% at 20% of a measured ceiling → busy but slow, with its numbers."""

import io

from rich.console import Console

from trainprof.report.html import render_html
from trainprof.report.loader import load_folder
from trainprof.report.markdown import render_markdown
from trainprof.report.terminal import print_context

from tests.unit.diagnose.run_records import run_record


def _folder(tmp_path):
    # MFU 10% of a 1000 TFLOP/s datasheet peak = 100 TFLOP/s; ceiling 500 → 20% of achievable
    rec = run_record({"forward_s": 0.3, "backward_s": 0.65, "optimizer_s": 0.05, "tflops": 100.0, "mfu": 0.10},
                     device={"kind": "cuda", "peak_tflops": 1000.0, "peak_source": "datasheet"},
                     achievable={"tflops": 500.0, "dtype": "bf16"})
    (tmp_path / "run.json").write_text(rec.to_json())
    return load_folder(tmp_path)


def test_reports_show_the_path_and_the_references(tmp_path):
    b = _folder(tmp_path)
    md = render_markdown(b)
    assert "Bottleneck flowchart (seed 002): compute efficiency: busy but slow" in md
    assert "| 95.0% | 70% | **no** |" in md and "| 20.0% | 50% | **yes** |" in md
    assert "Megatron-LM" in md and "room left" in md
    html = render_html(b)
    assert "compute efficiency: busy but slow" in html and "20.0%" in html and "Reference context" in html
    con = Console(file=io.StringIO(), width=300)
    print_context(b.run, None, con)
    out = con.file.getvalue()
    assert "busy but slow" in out and "% of achievable" in out


def test_stop_line_concludes_stop_from_a_lower_bound_but_never_keep_going():
    from trainprof.report.context import stop_line

    assert "unlikely to pay" in stop_line(0.75)  # ≥ 70% of the datasheet: ≥ 70% of achievable
    assert "lower bound" in stop_line(0.30)  # 30% of the datasheet: the ceiling decides
    assert "room left" in stop_line(0.30, measured_peak=True)
    assert stop_line(None) is None


def test_the_path_is_stored_once_and_the_reports_lay_out_the_record(tmp_path):
    # run.json stores the path (jobs/run.with_findings); the reports read it, field by field
    import json

    import msgspec

    from trainprof.diagnose.flowchart import flowchart
    from trainprof.jobs.run import with_findings
    from trainprof.report import figures

    b = _folder(tmp_path)
    rec = with_findings(b.run, None)
    stored = json.loads(rec.to_json())["flowchart"]
    assert stored["branch"] == "compute efficiency: busy but slow"
    assert [(t["value"], t["threshold"], t["passed"]) for t in stored["path"]] == [(95.0, 70.0, False),
                                                                                  (20.0, 50.0, True)]
    assert msgspec.to_builtins(flowchart(None, b.run)) == stored  # computed once, the same path
    # a planted record: the report shows what the record says, not a path recomputed at report time
    stored["branch"], stored["path"][0]["value"] = "planted branch", 12.3
    (tmp_path / "run.json").write_text(json.dumps({**json.loads(rec.to_json()), "flowchart": stored}))
    planted = load_folder(tmp_path)
    with figures.capture() as shown:
        md = render_markdown(planted)
    assert "Bottleneck flowchart (seed 002): planted branch" in md and "| 12.3% | 70% | **no** |" in md
    assert {(s.field, s.value) for s in shown} >= {("run.flowchart.path[0].value", 12.3),
                                                   ("run.flowchart.path[1].threshold", 50.0)}
    con = Console(file=io.StringIO(), width=300)
    print_context(planted.run, None, con)
    assert "planted branch" in con.file.getvalue()
    # a record written before the field existed still reads, and its path is computed as before
    old = json.loads(rec.to_json())
    del old["flowchart"]
    (tmp_path / "run.json").write_text(json.dumps(old))
    assert "| 95.0% | 70% | **no** |" in render_markdown(load_folder(tmp_path))
