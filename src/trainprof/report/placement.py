"""Point labels that do not overlap, placed before the chart is drawn (deterministic).

A roofline's points cluster (a model's GEMMs share an arithmetic intensity and a rate), and
a label beside each point writes them over one another. So the biggest points are labelled
first, each at the first of eight places around its marker where the label's box overlaps
no label already placed, no marker and stays inside the plot; a point with no free place
(or past `limit`) gets no label and keeps its tooltip and its row in the table. Boxes are
estimated from the font size (`CHAR_EM` of an em per character, measured on Chromium's
system-ui at 9–10 px: digits and lowercase average 0.55–0.6 em); the browser test
(tests/integration/test_report_browser.py) measures the drawn text and checks that no two
labels meet.

Coordinates are pixels of the plot area, y down (as SVG draws them).
"""

from __future__ import annotations

from dataclasses import dataclass

CHAR_EM = 0.62  # estimated width of a character, in ems (generous: a wider label only loses a place)
GAP = 3.0  # px between a marker and its label


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def meets(self, o: "Box", pad: float = 1.0) -> bool:
        return self.x0 < o.x1 + pad and o.x0 < self.x1 + pad and self.y0 < o.y1 + pad and o.y0 < self.y1 + pad


def text_box_size(text: str, font_px: float) -> tuple[float, float]:
    """(width, height) of one line of `text` at `font_px`."""
    return len(text) * CHAR_EM * font_px + 2.0, font_px * 1.25


def _candidates(x: float, y: float, r: float, w: float, h: float) -> list[Box]:
    """Right, left, above, below, then the four diagonals: a label's box around a marker."""
    d = r + GAP
    return [Box(x + d, y - h / 2, x + d + w, y + h / 2), Box(x - d - w, y - h / 2, x - d, y + h / 2),
            Box(x - w / 2, y - d - h, x + w / 2, y - d), Box(x - w / 2, y + d, x + w / 2, y + d + h),
            Box(x + d * 0.7, y - d * 0.7 - h, x + d * 0.7 + w, y - d * 0.7),
            Box(x - d * 0.7 - w, y - d * 0.7 - h, x - d * 0.7, y - d * 0.7),
            Box(x + d * 0.7, y + d * 0.7, x + d * 0.7 + w, y + d * 0.7 + h),
            Box(x - d * 0.7 - w, y + d * 0.7, x - d * 0.7, y + d * 0.7 + h)]


def place(points: list[tuple[float, float, float]], texts: list[str], width: float, height: float,
          font_px: float, limit: int) -> list[Box | None]:
    """Per point (x, y, marker radius; in priority order), its label's box or None."""
    markers = [Box(x - r, y - r, x + r, y + r) for x, y, r in points]
    placed: list[Box] = []
    out: list[Box | None] = []
    for i, ((x, y, r), text) in enumerate(zip(points, texts)):
        if len(placed) >= limit:
            out.append(None)
            continue
        w, h = text_box_size(text, font_px)
        spot = None
        for b in _candidates(x, y, r, w, h):
            if b.x0 < 0 or b.y0 < 0 or b.x1 > width or b.y1 > height:
                continue
            if any(b.meets(p) for p in placed) or any(b.meets(m, 0.0) for j, m in enumerate(markers) if j != i):
                continue
            spot = b
            break
        out.append(spot)
        if spot is not None:
            placed.append(spot)
    return out
