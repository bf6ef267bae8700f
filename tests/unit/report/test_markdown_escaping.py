"""Issue #45, item 2: no record string carries markup into report.md, diff.md or a study's report.

Every string a record holds is replaced by a payload (raw HTML, a link, emphasis, a code span,
strikethrough, a table pipe, bare URLs), found by walking the record's *type* (recordtypes/,
msgspec's type info) beside its JSON, so dict keys that are data are poisoned too and field
names are not. Two sources: the saved records of tests/data/reports (real shapes), and records
synthesized from the types with every optional part present (every string field there is).
The Markdown is rendered by markdown-it-py (CommonMark with tables and strikethrough, raw HTML
passed through as GitHub's renderer does) and checked: the payload shows as text, and none of
it became an element, a link, emphasis, a code span or a table cell.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from report_fixtures import DATA, KINDS

from trainprof.report.loader import TYPED, load_folder
from trainprof.report.markdown import render_markdown

PAYLOAD = ("<img src=x onerror=alert(1)> [x](http://evil.example/a) _u_ *s* **b** `c` ~~d~~ | "
           "www.evil.example <http://evil.example/b> &lt;i&gt; ![i](http://evil.example/i.png)")
FILES = {"run": "run.json", "analysis": "analysis.json", "optimised": "analysis_optimised.json", "tune": "tune.json",
         "diff": "diff.json", "memory": "memory.json", "bench": "bench.json", "ettr": "ettr.json"}
KEEP = {"schema", "records"}  # the record's kind, and where a study's records are (paths the loader opens)


def _poison(value: Any, t: Any) -> Any:
    """`value` (JSON) with every string of type `t` replaced by PAYLOAD (dict keys of data too)."""
    if isinstance(t, mi.StructType):
        if not isinstance(value, dict):
            return value
        types = {f.encode_name: f.type for f in t.fields}
        return {k: (v if k in KEEP or k not in types else _poison(v, types[k])) for k, v in value.items()}
    if isinstance(t, mi.UnionType):
        for member in t.types:
            if _fits(value, member):
                return _poison(value, member)
        return value
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)) and isinstance(value, list):
        return [_poison(v, t.item_type) for v in value]
    if isinstance(t, mi.TupleType) and isinstance(value, list):
        return [_poison(v, it) for v, it in zip(value, t.item_types)]
    if isinstance(t, mi.DictType) and isinstance(value, dict):
        key = isinstance(t.key_type, (mi.StrType, mi.AnyType))
        return {(f"{k}{PAYLOAD}" if key else k): _poison(v, t.value_type) for k, v in value.items()}
    if isinstance(t, mi.StrType) and isinstance(value, str):
        return PAYLOAD
    if isinstance(t, mi.AnyType):
        if isinstance(value, str):
            return PAYLOAD
        if isinstance(value, list):
            return [_poison(v, t) for v in value]
        if isinstance(value, dict):
            return {f"{k}{PAYLOAD}": _poison(v, t) for k, v in value.items()}
    return value


def _fits(value: Any, t: Any) -> bool:
    kinds = {mi.StructType: dict, mi.DictType: dict, mi.ListType: list, mi.VarTupleType: list, mi.TupleType: list,
             mi.StrType: str, mi.IntType: int, mi.FloatType: (int, float), mi.BoolType: bool, mi.AnyType: object}
    if isinstance(t, mi.NoneType):
        return value is None
    want = kinds.get(type(t))
    return want is not None and isinstance(value, want) and not (want in (int, (int, float)) and isinstance(value, bool))


def _synth(t: Any, depth: int = 0) -> Any:
    """A JSON value of type `t` with every optional part present and every string PAYLOAD."""
    if isinstance(t, mi.StructType):
        return {f.encode_name: _synth(f.type, depth + 1) for f in t.fields if f.encode_name not in KEEP}
    if isinstance(t, mi.UnionType):
        real = [m for m in t.types if not isinstance(m, (mi.NoneType,)) and type(m).__name__ != "UnsetType"]
        structs = [m for m in real if isinstance(m, mi.StructType)]
        return _synth((structs or real or t.types)[0], depth + 1)
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return [] if depth > 12 else [_synth(t.item_type, depth + 1)]
    if isinstance(t, mi.TupleType):
        return [_synth(it, depth + 1) for it in t.item_types]
    if isinstance(t, mi.DictType):
        return {} if depth > 12 else {PAYLOAD: _synth(t.value_type, depth + 1)}
    if isinstance(t, (mi.StrType, mi.AnyType)):
        return PAYLOAD
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, mi.BoolType):
        return True
    if isinstance(t, (mi.IntType, mi.FloatType)):
        return 1
    return None


def _poisoned_folder(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        attr = next((a for a, name in FILES.items() if name == f.name), None)
        doc = json.loads(f.read_text())
        if attr is not None:
            doc = _poison(doc, mi.type_info(TYPED[attr]))
        (dst / f.name).write_text(json.dumps(doc))
    return dst


def _record(attr: str) -> dict:
    """A synthesized record of one Bundle attribute."""
    doc = _synth(mi.type_info(TYPED[attr]))
    doc["schema"] = _schema(TYPED[attr])
    return doc


def _synthesized_folder(dst: Path, kinds: tuple[str, ...]) -> Path:
    dst.mkdir(parents=True)
    for attr in kinds:
        (dst / FILES[attr]).write_text(json.dumps(_record(attr)))
    return dst


def _schema(cls: type) -> str:
    from trainprof.recordtypes.base import prefix_of

    return prefix_of(cls) + "1"


def _study_folder(dst: Path) -> Path:
    """A study folder: a synthesized study.json naming synthesized records in sub-folders."""
    dst.mkdir(parents=True)
    records = {"run": "baseline/run.json", "analysis": "baseline/analysis.json", "tune": "tune/tune.json",
               "optimised": "optimised/analysis.json", "optimised_run": "optimised/run.json", "diff": "diff/diff.json"}
    for attr, rel in records.items():
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_text(json.dumps(_record(attr)))
    study = _synth(mi.type_info(TYPED["study"]))
    study.update(schema=_schema(TYPED["study"]), records=records)
    (dst / "study.json").write_text(json.dumps(study))
    return dst


_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _check(md: str, where: str, shown: bool = True) -> None:
    html = _MD.render(md)
    # the payload was rendered, as text (the test is not vacuous)
    assert not shown or "&lt;img src=x onerror=alert(1)&gt;" in html, f"{where}: the payload is not shown"
    assert "<img" not in html and "onerror=alert(1)>" not in html, f"{where}: raw HTML from a record"
    assert "evil.example" not in "".join(re.findall(r'(?:href|src)="[^"]*"', html)), f"{where}: a live link"
    for tag in ("<em>u</em>", "<em>s</em>", "<strong>b</strong>", "<del>d</del>", "<s>d</s>", "<code>c</code>", "<em>i</em>"):
        assert tag not in html, f"{where}: {tag} made from record text"
    # GitHub also links bare URLs (www., http://): they must not reach the text as such
    plain = re.sub(r"`[^`]*`", "", md)  # code spans are never linked
    assert "://evil.example" not in plain and "www.evil.example" not in plain, f"{where}: a bare URL GitHub would link"
    for block in re.findall(r"(?:^\|.*\n)+", md, flags=re.M):  # tables: an unescaped | adds a cell
        rows = block.splitlines()
        n = len(re.split(r"(?<!\\)\|", rows[0]))
        assert all(len(re.split(r"(?<!\\)\|", r)) == n for r in rows), f"{where}: a table cell broken: {rows}"


@pytest.mark.parametrize("kind", KINDS + ("diff",))
def test_poisoned_saved_records_show_the_payload_as_text(tmp_path, kind):
    d = _poisoned_folder(DATA / kind, tmp_path / kind)
    md = render_markdown(load_folder(d))
    # report.md shows a memory or bench record's figures only, none of its strings
    _check(md, f"report.md of {kind}", shown=md != render_markdown(load_folder(DATA / kind)))


@pytest.mark.parametrize("kinds", [("run", "analysis", "optimised", "tune"), ("diff",), ("memory", "bench", "ettr")])
def test_synthesized_records_with_every_string_field_show_the_payload_as_text(tmp_path, kinds):
    d = _synthesized_folder(tmp_path / "syn", kinds)
    _check(render_markdown(load_folder(d)), f"report.md of synthesized {kinds}", shown="memory" not in kinds)


def test_a_study_report_shows_the_payload_as_text(tmp_path):
    d = _study_folder(tmp_path / "study")
    _check(render_markdown(load_folder(d)), "the study's report.md")


def test_diff_md_shows_the_payload_as_text(tmp_path):
    from trainprof.recordtypes.diff import Diff
    from trainprof.report.diff_terminal import diff_markdown

    poisoned = _poison(json.loads((DATA / "diff" / "diff.json").read_text()), mi.type_info(Diff))
    _check(diff_markdown(msgspec.convert(poisoned, Diff), PAYLOAD), "diff.md (saved)")
    doc = _synth(mi.type_info(Diff))
    doc["schema"] = _schema(Diff)
    _check(diff_markdown(msgspec.convert(doc, Diff), PAYLOAD), "diff.md (synthesized)")


def test_an_image_link_from_another_folder_stays_one_destination(tmp_path):
    """`report --out DIR2` links the images relative to DIR2: the path holds the folder's name."""
    src = tmp_path / "run (1)](http:"
    shutil.copytree(DATA / "cpu_run", src)
    (src / "roofline.png").write_bytes(b"\x89PNG")
    out = tmp_path / "out"
    out.mkdir()
    html = _MD.render(render_markdown(load_folder(src), out))
    assert '<img src="../run%20%281%29%5D%28http%3A/roofline.png"' in html


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab1_*[]()<>`~|!&#;:/w. \\-=+é", max_size=30))
def test_md_shows_any_text_as_it_is(text):
    """`md` (md_cells.md_text): whatever a record string holds renders as exactly that text,
    mid-line as the templates put it: no element, link, emphasis or entity made of it."""
    import html as htmllib

    from trainprof.report.md_cells import md_text

    out = _MD.render("x " + md_text(text) + " x").strip()
    assert out.startswith("<p>") and out.endswith("</p>") and "<" not in out[3:-4], (text, out)
    assert " ".join(htmllib.unescape(out[3:-4]).split()) == " ".join(("x " + text + " x").split())
