"""report.html in a real browser: headless Chromium (Debian's, driven by playwright-python,
no browser download) opens the file offline, draws every chart, and logs no error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trainprof.cli import main

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "reports"
DDP = REPO / "tests" / "data" / "traces" / "real" / "hta_ddp_2rank_nccl_a100" / "nccl_data.json.gz"
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (apt-get install chromium; "
                                "the CI script installs it)")


def _folder(tmp_path: Path, *kinds: str) -> Path:
    out = tmp_path / "rep"
    out.mkdir()
    for k in kinds:
        for f in (DATA / k).iterdir():
            shutil.copy(f, out / f.name)
    return out


class _Page:
    """One page load: console messages, page errors and every URL the page asked for."""

    def __init__(self, browser, url: str, shot: Path | None = None) -> None:  # noqa: ANN001
        self.console: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 1800})
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(url)


def _browser(p):  # noqa: ANN001, ANN202
    return p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                              "--disable-dev-shm-usage"])


# Every drawn text of every chart (axis labels and titles, legends, mark labels) as a box;
# pairs that overlap by more than a pixel both ways. Texts Vega hid (labelOverlap) are skipped.
OVERLAPS = """() => Object.fromEntries(Array.from(document.querySelectorAll('div.vl')).map(div => {
  const boxes = [];
  div.querySelectorAll('svg text').forEach(t => {
    const s = (t.textContent || '').trim();
    const st = getComputedStyle(t);
    if (!s || st.visibility === 'hidden' || st.display === 'none' || +st.opacity === 0
        || (t.getAttribute('opacity') !== null && +t.getAttribute('opacity') === 0)) return;
    const r = t.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) boxes.push({s, x: r.left, y: r.top, w: r.width, h: r.height});
  });
  const bad = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    const ox = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
    const oy = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
    if (ox > 1 && oy > 1) bad.push(a.s + ' / ' + b.s);
  }
  return [div.id, {texts: boxes.length, overlaps: bad}];
}))"""


def _charts_drawn(page) -> dict:  # noqa: ANN001
    page.wait_for_function("window.trainprofCharts && trainprofCharts.total > 0 && "
                           "trainprofCharts.done + trainprofCharts.failed.length === trainprofCharts.total",
                           timeout=90_000)
    state = page.evaluate("({total: trainprofCharts.total, done: trainprofCharts.done, "
                          "failed: trainprofCharts.failed})")
    # marks per chart: the children of Vega's mark groups (bars, lines, points, text), not axes
    state["marks"] = page.evaluate("""Object.fromEntries(Array.from(document.querySelectorAll('div.vl'))
        .map(d => [d.id, d.querySelectorAll('svg g.role-mark > path, svg g.role-mark > text, '
                                            + 'svg g.role-mark > line').length]))""")
    return state


def _more_pages(tmp_path: Path) -> list[Path]:
    """The other shipped report folders, and a trace whose roofline points cluster (MI300
    ResNet: ten points in two clumps; their labels overlapped before report/placement.py)."""
    pages = []
    for kind in ("gpu_trace", "multi_rank"):
        (tmp_path / kind).mkdir()
        d = _folder(tmp_path / kind, kind)
        assert main(["report", str(d), "--format", "html"]) == 0
        pages.append(d / "report.html")
    mi300 = REPO / "tests" / "data" / "traces" / "real" / "tracelens_mi300_resnet_ddp_8rank_rank0"
    assert main(["analyze", str(mi300 / "resnet_act_checkpoint.json.gz"), "--out", str(tmp_path / "mi300"),
                 "--json"]) == 0
    return pages + [tmp_path / "mi300" / "report.html"]


def _no_overlaps(view: "_Page", page_file: Path) -> None:
    found = view.page.evaluate(OVERLAPS)
    assert any(c["texts"] for c in found.values()), found
    bad = {cid: c["overlaps"] for cid, c in found.items() if c["overlaps"]}
    assert not bad, f"{page_file}: {bad}"


@pytest.mark.slow  # drives headless Chromium
def test_report_charts_render_offline_with_no_console_errors(tmp_path, capsys):
    """Every chart of every page draws, offline, with no console error; and (issue #32's
    done-when) no drawn text of any chart meets another: axis labels, legends, the roofline's
    point labels, measured in the browser on the shipped report folders and on the DDP
    (critical path) and MI300 (clustered roofline) traces."""
    from playwright.sync_api import sync_playwright

    d = _folder(tmp_path, "cpu_run", "tune", "memory", "bench")
    assert main(["report", str(d), "--format", "html"]) == 0
    trace_out = tmp_path / "trace"
    assert main(["analyze", str(DDP), "--out", str(trace_out), "--json"]) == 0
    more = _more_pages(tmp_path)
    capsys.readouterr()

    with sync_playwright() as p:
        browser = _browser(p)
        try:
            # Control: a page that logs an error must be seen, or the checks below mean nothing.
            bad = tmp_path / "bad.html"
            bad.write_text("<!DOCTYPE html><html><body><script>console.error('control-error')</script></body></html>")
            assert any("control-error" in m for m in _Page(browser, bad.as_uri()).console)
            # Control: two texts drawn over each other must be caught by the overlap check.
            bad.write_text('<!DOCTYPE html><html><body><div class="vl" id="c"><svg width="200" height="50">'
                           '<text x="10" y="20">overlapping</text><text x="14" y="22">labels</text></svg></div>'
                           '</body></html>')
            assert _Page(browser, bad.as_uri()).page.evaluate(OVERLAPS)["c"]["overlaps"] == ["overlapping / labels"]

            for page_file, expected in ((d / "report.html", {"chart-steps", "chart-profile-roofline",
                                                              "chart-ladder", "chart-memory"}),
                                        (trace_out / "report.html", {"chart-profile-steps", "chart-profile-temporal",
                                                                      "chart-profile-idle"})):
                view = _Page(browser, page_file.as_uri())
                state = _charts_drawn(view.page)
                assert state["failed"] == [] and state["done"] == state["total"], state
                assert expected <= set(state["marks"]), state["marks"]
                assert all(n > 0 for n in state["marks"].values()), state["marks"]
                assert not view.console, view.console
                assert all(u.startswith("file://") for u in view.requests), view.requests  # offline
                _no_overlaps(view, page_file)
                shot = tmp_path / f"{page_file.parent.name}.png"
                view.page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 50_000
            for page_file in more:
                view = _Page(browser, page_file.as_uri())
                state = _charts_drawn(view.page)
                assert state["failed"] == [] and all(n > 0 for n in state["marks"].values()), state
                _no_overlaps(view, page_file)
                assert not view.console, view.console
            # the clustered roofline labels some points (the biggest first), not all ten
            labels = view.page.evaluate("document.querySelectorAll('#chart-profile-roofline "
                                        "g.mark-text.role-mark text').length")
            assert 1 <= labels < 10, labels

            # values on hover: the temporal breakdown's bar for "compute" shows its ms in the tooltip
            view = _Page(browser, (trace_out / "report.html").as_uri())
            _charts_drawn(view.page)
            bar = view.page.locator("#chart-profile-temporal g.mark-rect path").first
            bar.hover()
            tip = view.page.locator("#vg-tooltip-element")
            tip.wait_for(state="visible", timeout=10_000)
            assert "compute" in tip.inner_text() and "ms" in tip.inner_text()

            # zoom: dragging across the strip under the per-step chart brushes a range of steps
            boxes = [b for b in (g.bounding_box() for g in
                                 view.page.locator("#chart-profile-steps g.mark-rect.role-mark").all())
                     if b and b["width"] > 10 and b["height"] > 2]
            strip = max(boxes, key=lambda b: b["y"])  # the strip's bars: the lowest drawn rects
            assert view.page.evaluate("trainprofCharts.views['chart-profile-steps'].data('brush_store').length") == 0
            y = strip["y"] + strip["height"] / 2
            view.page.mouse.move(strip["x"] + 0.05 * strip["width"], y)
            view.page.mouse.down()
            view.page.mouse.move(strip["x"] + 0.5 * strip["width"], y, steps=5)
            view.page.mouse.up()
            assert view.page.evaluate("trainprofCharts.views['chart-profile-steps'].data('brush_store').length") == 1

            # sortable tables: a click on "total" orders the top kernels largest first
            table = view.page.locator("table", has=view.page.locator("th", has_text="kernel")).first
            heads = table.locator("thead th")
            col = [heads.nth(i).inner_text().strip() for i in range(heads.count())].index("total")
            before = table.locator("tbody tr").first.inner_text()
            heads.nth(col).click()
            cells = table.locator(f"tbody tr td:nth-child({col + 1})").all_inner_texts()
            assert view.page.evaluate("""cells => { const u = {'µs': 1e-6, 'ms': 1e-3, 's': 1};
                const v = cells.map(c => { const m = c.replace(/,/g, '').match(/([\\d.]+) (µs|ms|s)/);
                                            return parseFloat(m[1]) * u[m[2]]; });
                return v.every((x, i) => i === 0 || v[i - 1] >= x); }""", cells), cells
            heads.nth(col).click()  # second click: smallest first
            assert table.locator("tbody tr").first.inner_text() != before or len(cells) < 2
            assert not view.console, view.console
        finally:
            browser.close()

