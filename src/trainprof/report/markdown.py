"""report.md: the experiment report (report/templates/report.md.j2 and md/*.md.j2), in the
order a profiling assignment reads it:

Method → baseline profile (top-5 and roofline) → optimisations chosen and why → optimised
profile → speed-up per iteration → analysis and what could still be done. Every number is
read from a record; a part whose record is missing says which command produces it. This
module gives the templates what they cannot read from a record alone: the findings in the
order the report ranks them, the images' links relative to where report.md goes, the title.
"""

from __future__ import annotations

import os
from pathlib import Path


from trainprof.report.view_findings import gain_of
from trainprof.report.chart_registry import image_names
from trainprof.report.findings_list import listed
from trainprof.report.loader import Bundle

IMAGES = image_names()  # export stem -> its files, the first one there (report/chart_registry.py)


def _images(b: Bundle, out_dir: Path) -> dict[str, str | None]:
    """Each chart's image as a link relative to report.md's folder, None where the folder has none;
    percent-encoded, so a folder name with a space, `)` or `]` stays one link destination."""
    from urllib.parse import quote

    def link(names: tuple[str, ...]) -> str | None:
        n = next((n for n in names if n in b.images), None)
        return None if n is None else quote(Path(os.path.relpath(b.images[n], out_dir)).as_posix())

    return {k: link(names) for k, names in IMAGES.items()}


def render_markdown(b: Bundle, out_dir: Path | None = None) -> str:
    """`out_dir`: where report.md goes (images are linked relative to it)."""
    from trainprof.controls import shell_join
    from trainprof.report.templating import render
    from trainprof.report.text import visible_bundle
    from trainprof.report.view_diff import diff_view
    from trainprof.report.view_rank_md import rank_text
    from trainprof.report.view_study import study_view

    b = visible_bundle(b)  # trace-derived names: control characters shown, never sent
    run = b.run
    title = (f"{run.model.get('preset') or run.model.get('class')} on {run.device.name}" if run else b.name)
    findings = listed(b.analysis, "analysis", b.run)
    # a study whose knob changed the tokens per step compares the profiled steps per token
    unlike = b.study is not None and bool(b.study.speedup) and b.study.speedup.equal_tokens_per_step is False
    from trainprof.report.context import chart, chart_field, reference_rows

    ettr = b.ettr.ettr if b.ettr and b.ettr.ettr is not None else None
    text = render("report.md.j2", b=b, refs=reference_rows(run, ettr), chart=chart(b.analysis, run),
                  chart_at=chart_field(b.analysis, run), title=title, command=shell_join(run.command) if run and run.command else None,
                  unreadable=(b.analysis.unreadable or []) if b.analysis else [], findings=findings,
                  after=listed(b.optimised, "optimised"), gain_of=f"of {gain_of(b.analysis, b.run)}", unlike=unlike,
                  dv=diff_view(b.diff) if b.diff else None,
                  sv=study_view(b.study, (run.batch_unit if run else None) or "tokens"),
                  rt=rank_text(b.analysis.ranks[0], "analysis.ranks[0]") if b.analysis and b.analysis.ranks else None,
                  ot=rank_text(b.optimised.ranks[0], "optimised.ranks[0]") if b.optimised and b.optimised.ranks
                  else None,
                  images=_images(b, Path(out_dir) if out_dir is not None else b.folder))
    return text.rstrip() + "\n"
