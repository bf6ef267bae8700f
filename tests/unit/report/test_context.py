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
