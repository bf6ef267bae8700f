"""Helpers for the report tests: saved records (tests/data/reports/*) copied into tmp folders,
an HTML structure checker."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data" / "reports"
KINDS = ("cpu_run", "gpu_trace", "multi_rank", "tune", "memory", "bench")
EVIL = 'evil_kernel<float, &Op::run>("x" & $y$) </td></table><script>alert(1)</script>'


def folder(tmp_path: Path, *kinds: str, name: str = "rep") -> Path:
    """A folder holding the records of `kinds` (later kinds win on a shared file name)."""
    out = tmp_path / name
    out.mkdir(parents=True, exist_ok=True)
    for k in kinds:
        for f in (DATA / k).iterdir():
            shutil.copy(f, out / f.name)
    return out


def with_evil_kernel(path: Path) -> None:
    """Rename the top kernel, operator and roofline point of analysis.json to EVIL."""
    doc = json.loads(path.read_text())
    r = doc["ranks"][0]
    for rows in (r["top_kernels"], r["top_ops"], r["roofline_points"]):
        if rows:
            rows[0]["name"] = EVIL
    r["findings"][0]["evidence"] += " " + EVIL
    path.write_text(json.dumps(doc))


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Structure(HTMLParser):
    """Every element closed in order; records ids, tags and external references."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.ids: set[str] = set()
        self.tags: dict[str, int] = {}
        self.refs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k == "id":
                self.ids.add(v)
            if k in ("src", "href", "xlink:href", "action", "data") and v is not None:
                self.refs.append(v)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k in ("src", "href", "xlink:href") and v is not None:
                self.refs.append(v)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Structure:
    p = Structure()
    p.feed(html)
    p.close()
    return p
