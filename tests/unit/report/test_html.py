"""report.html from saved records: sections, escaping, self-containment, structure."""

from __future__ import annotations

import re

import pytest
from report_fixtures import EVIL, KINDS, parse, with_evil_kernel

from trainprof.report.html import render_html
from trainprof.report.loader import load_folder

# section id -> the fixture kinds that must make it appear
SECTIONS = {
    "steps": {"cpu_run"}, "config": {"cpu_run"}, "profile": {"cpu_run", "gpu_trace", "multi_rank"},
    "findings": {"cpu_run", "gpu_trace", "multi_rank"}, "ettr": {"cpu_run"}, "ranks": {"multi_rank"},
    "tune": {"tune"}, "memory": {"memory"}, "bench": {"bench"},
}


def _render(make_folder, *kinds: str) -> str:
    return render_html(load_folder(make_folder(*kinds)))


def _specs(html: str) -> dict:
    """The charts' Vega-Lite specs, as the page's script parses them."""
    import json

    m = re.search(r'<script type="application/json" id="trainprof-charts">(.*?)</script>', html, re.DOTALL)
    return json.loads(m.group(1)) if m else {}


def _assert_self_contained(html: str) -> None:
    p = parse(html)
    assert not p.errors, p.errors[:5]
    assert not p.stack, f"unclosed: {p.stack}"
    assert "link" not in p.tags and "iframe" not in p.tags and "img" not in p.tags
    # Scripts are inline only: the charts' JSON, the vendored Vega libraries, the page's own.
    scripts = re.findall(r"<script\b([^>]*)>", html, re.IGNORECASE)
    assert len(scripts) <= 3 and all("src" not in a.lower() for a in scripts), scripts
    assert p.tags.get("script", 0) == len(scripts)
    # Only in-page anchors and no url(...) fetches: the file must work offline.
    assert all(r.startswith("#") for r in p.refs), [r for r in p.refs if not r.startswith("#")][:5]
    html = re.sub(r"<script\b.*?</script>", "", html, flags=re.DOTALL | re.IGNORECASE)  # code, not markup
    assert not re.search(r"url\(\s*['\"]?(https?:|//)", html)
    assert not re.search(r"(src|href)\s*=\s*['\"]?\s*(https?:|//)", html, re.IGNORECASE)
    assert "@import" not in html


@pytest.mark.parametrize("kind", KINDS)
def test_each_record_alone(make_folder, kind):
    html = _render(make_folder, kind)
    _assert_self_contained(html)
    ids = parse(html).ids
    for section, kinds in SECTIONS.items():
        assert (section in ids) == (kind in kinds), (section, kind)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


def test_everything_together(make_folder):
    html = _render(make_folder, "cpu_run", "tune", "memory", "bench")
    _assert_self_contained(html)
    ids = parse(html).ids
    assert {"steps", "profile", "findings", "tune", "memory", "bench", "ettr", "config"} <= ids
    text = " ".join(parse(html).text)
    for card in ("MFU", "model TFLOPS", "tokens/s", "step time", "ETTR", "tuned speed-up"):
        assert card in text
    # charts are Vega-Lite specs drawn in the page: step split, roofline, ladder, memory
    specs = _specs(html)
    assert {"chart-steps", "chart-profile-roofline", "chart-ladder", "chart-memory"} <= set(specs)
    assert all(f'id="{cid}"' in html for cid in specs)
    # the tuning table gives the guard's evidence beside its verdict
    assert "|Δloss| 0.012, Δval -0.004" in text and "× best so far" in text


def test_gpu_trace_sections_and_escaping(make_folder):
    d = make_folder("gpu_trace")
    with_evil_kernel(d / "analysis.json")
    html = render_html(load_folder(d))
    _assert_self_contained(html)
    assert EVIL not in html  # never raw
    assert "evil_kernel&lt;float, &amp;Op::run&gt;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    text = " ".join(parse(html).text)
    assert "Temporal breakdown: GPU time, HTA's window" in text and "Why the GPU was idle, HTA's window" in text
    assert "Top 6 kernels" in text
    # real kernel names hold < > too
    assert "vectorized_elementwise_kernel&lt;4" in html


def test_evil_name_on_the_roofline_chart(make_folder):
    """The roofline chart carries op names as JSON data: never markup, intact once parsed."""
    d = make_folder("cpu_run")
    with_evil_kernel(d / "analysis.json")
    html = render_html(load_folder(d))
    _assert_self_contained(html)
    assert "<script>alert" not in html and "</td></table><script>" not in html
    # the name reaches the chart as JSON data, intact once parsed
    names = [d.get("op") for layer in _specs(html)["chart-profile-roofline"]["layer"]
             for d in layer.get("data", {}).get("values", [])]
    assert EVIL in names


def test_multi_rank_table_marks_the_straggler(make_folder):
    html = _render(make_folder, "multi_rank")
    assert "straggler (+12.1% compute)" in html
    # a GPU trace analysed with roofs measured on this CPU gets a warning
    assert "not on the trace" in html


def test_unconfirmed_knobs_leave_the_baseline_best(make_folder):
    import json

    d = make_folder("cpu_run", "tune")
    doc = json.loads((d / "tune.json").read_text())
    doc["best"].update(knobs=[], speedup=1.0, unconfirmed={"knobs": ["gc_disable"], "reason": "the kept knobs "
                       "measured 1.01× the baseline in 3 alternating pairs (needs ≥ 1.03×)"})
    doc["best"]["verify"].update(speedup_median=1.01, speedup_min=0.9, speedup_max=1.1)
    (d / "tune.json").write_text(json.dumps(doc))
    text = " ".join(" ".join(parse(render_html(load_folder(d))).text).split())
    assert "Best: the baseline : the kept knobs measured 1.01×" in text  # parse() splits at the </strong>
    assert "(0.90–1.10×), so gc_disable not kept" in text and "not confirmed by the verify pairs" in text


def test_rendering_is_deterministic(make_folder):
    d = make_folder("cpu_run", "tune")
    assert render_html(load_folder(d)) == render_html(load_folder(d))


def test_missing_optional_keys_render_as_dashes(make_folder, tmp_path):
    """memory.json and ettr.json are young records: a minimal one still renders."""
    import json

    d = make_folder("memory")
    (d / "memory.json").write_text(json.dumps({"schema": "trainprof.memory/1", "params_bytes": 2**20}))
    (d / "ettr.json").write_text(json.dumps({"schema": "trainprof.ettr/1", "ettr": 0.9}))
    html = render_html(load_folder(d))
    _assert_self_contained(html)
    assert "1.00 MiB" in html and "90.0%" in html


def test_system_section_with_gpu_power_and_energy(make_folder):
    import json

    from trainprof.analysis.run.system import summarise_system

    path = make_folder("cpu_run")
    run = json.loads((path / "run.json").read_text())
    samples = [{"t_s": float(t), "cpu_util_pct": 50.0, "rss_bytes": 2**30,
                "gpus": [{"index": 0, "util_pct": 97, "power_w": 400.0, "sm_clock_mhz": 1980}]} for t in range(5)]
    run["system"] = summarise_system(samples, interval_s=1.0, window=(1.0, 3.0), steps=4, tokens=8000)
    (path / "run.json").write_text(json.dumps(run))
    html = render_html(load_folder(path))
    _assert_self_contained(html)
    assert "system" in parse(html).ids
    text = " ".join(parse(html).text)
    # 400 W over the 2 s window = 800 J; 200 J per step; 0.1 J = 100 mJ per token
    assert "800.00 J over 4 measured steps: 200.00 J/step, 100.000 mJ/token (NVML power, trapezoid integral)" in text
    assert "GPU 0" in text and "unavailable: no RAPL readings" in text
    assert set(_specs(html)) == set(_specs(_render(make_folder, "cpu_run"))) | {"chart-system"}
