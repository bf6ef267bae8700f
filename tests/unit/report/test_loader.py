"""Reading a report folder: what is found, and one-line errors for what is wrong."""

from __future__ import annotations

import pytest

from trainprof.errors import InputError
from trainprof.report.loader import load_folder


def test_finds_records_and_images(make_folder):
    d = make_folder("cpu_run", "tune")
    (d / "tune.png").write_bytes(b"\x89PNG")
    (d / "journal.jsonl").write_text("{}\n")  # not a record: ignored
    b = load_folder(d)
    assert b.files == ["run.json", "analysis.json", "tune.json", "ettr.json"]
    assert b.run.schema == "trainprof.run/1" and b.memory is None
    assert set(b.images) == {"tune.png"} and b.name == "rep"


def test_no_records(tmp_path):
    with pytest.raises(InputError, match=r"no trainprof records here") as e:
        load_folder(tmp_path)
    assert str(tmp_path) in str(e.value) and "\n" not in str(e.value)


def test_missing_folder_and_a_file(tmp_path):
    with pytest.raises(InputError, match="no such folder"):
        load_folder(tmp_path / "nope")
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(InputError, match="not a folder"):
        load_folder(tmp_path / "run.json")


def test_corrupt_json_names_the_file(make_folder):
    d = make_folder("tune")
    (d / "tune.json").write_text('{"schema": "trainprof.tune/1", "best": ')
    with pytest.raises(InputError) as e:
        load_folder(d)
    msg = str(e.value)
    assert msg.startswith(str(d / "tune.json")) and "not valid JSON" in msg and "\n" not in msg


def test_wrong_schema_names_the_file(make_folder):
    d = make_folder("bench")
    (d / "bench.json").write_text('{"schema": "trainprof.run/1"}')
    with pytest.raises(InputError, match=r"bench\.json: schema 'trainprof.run/1' is not trainprof.bench/N"):
        load_folder(d)
    (d / "bench.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="expected a JSON object"):
        load_folder(d)


@pytest.mark.parametrize("kind, path, edit", [
    ("gpu_trace", "ranks[0].idle_breakdown.gaps", lambda d: d["ranks"][0]["idle_breakdown"].update(gaps="many")),
    ("multi_rank", "multi_rank.per_rank[0].wait_us",
     lambda d: d["multi_rank"]["per_rank"][0].update(wait_us="long")),
])
def test_an_analysis_field_of_the_wrong_type_names_the_file_and_the_field(make_folder, kind, path, edit):
    import json

    d = make_folder(kind)
    doc = json.loads((d / "analysis.json").read_text())
    edit(doc)
    (d / "analysis.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        load_folder(d)
    msg = str(e.value)
    assert msg.startswith(str(d / "analysis.json")) and f"at `{path}`" in msg and "\n" not in msg


def test_a_study_folder_lists_the_files_it_holds(tmp_path):
    """A study keeps its records in sub-folders: the reports' headers name those paths and
    nothing that is not there (the header listed `analysis_optimised.json`, issue #32)."""
    import json
    import shutil

    from report_fixtures import DATA

    from trainprof.report.html import render_html
    from trainprof.report.markdown import render_markdown

    d = tmp_path / "study"
    for sub, src in (("baseline", "cpu_run"), ("optimised", "gpu_trace")):
        (d / sub).mkdir(parents=True)
        shutil.copy(DATA / src / "analysis.json", d / sub / "analysis.json")
    shutil.copy(DATA / "cpu_run" / "run.json", d / "baseline" / "run.json")
    (d / "study.json").write_text(json.dumps({"schema": "trainprof.study/1", "records": {
        "run": "baseline/run.json", "analysis": "baseline/analysis.json", "optimised": "optimised/analysis.json",
        "tune": "tune/tune.json"}}))  # the tune stage never ran: its file is absent
    b = load_folder(d)
    assert b.files == ["study.json", "baseline/run.json", "baseline/analysis.json", "optimised/analysis.json"]
    html = render_html(b)
    head = html[html.index("<header>"):html.index("</header>")]
    assert "from study.json, baseline/run.json, baseline/analysis.json, optimised/analysis.json" in head
    assert "analysis_optimised.json" not in head and "tune.json" not in head
    assert "tune/tune.json" not in render_markdown(b).split("\n## ")[0]


def test_an_old_run_gets_its_split_and_a_null_phase_is_refused_naming_it(make_folder):
    """A run.json from before `summary.phase_split` gets it at load (loader.complete_run), from
    its measured steps; it re-encodes as it was written otherwise (the fields it lacks stay
    UNSET). A step whose phase is null (hand-edited) is one InputError naming the file and the
    field (run.json is decoded into recordtypes.run.RunRecord), not a TypeError in the report."""
    import json

    d = make_folder("cpu_run")
    run = json.loads((d / "run.json").read_text())
    assert "phase_split" not in run["summary"] and run["summary"]["warmup_steps"] == 2 and len(run["steps"]) == 4
    rec = load_folder(d).run
    split = rec.summary.phase_split
    # the measured steps are 2 and 3 (after 2 warm-up): each mean is theirs
    assert split["data_s"]["mean_s"] == pytest.approx((run["steps"][2]["data_s"] + run["steps"][3]["data_s"]) / 2)
    # the file's own fields, in its order, as written (system, memory_snapshot absent: not null)
    rebuilt = rec.to_dict()
    rebuilt["summary"] = {k: v for k, v in rebuilt["summary"].items() if k != "phase_split"}
    assert json.dumps(rebuilt) == json.dumps(run)
    run["steps"][3]["data_s"] = None
    (d / "run.json").write_text(json.dumps(run))
    with pytest.raises(InputError, match=r"run\.json: Expected a number, got `null` at `steps\[3\]\.data_s`"):
        load_folder(d)


def test_a_study_json_field_of_the_wrong_type_names_the_file_and_the_field(tmp_path):
    """study.json is decoded into recordtypes/study.Study: a stage whose wall time is text is
    one InputError naming the file and the field (it was a TypeError in the report's maths)."""
    import json

    d = tmp_path / "study"
    d.mkdir()
    (d / "study.json").write_text(json.dumps({"schema": "trainprof.study/2", "records": {},
                                              "stages": [{"stage": "baseline", "status": "done", "wall_s": "slow"}]}))
    with pytest.raises(InputError, match=r"study\.json: Expected `int \| float \| null`, got `str` at `stages\[0\]\.wall_s`"):
        load_folder(d)


@pytest.mark.parametrize("folder", ["gpu_trace", "multi_rank"])
def test_the_text_just_written_renders_the_reports_the_file_does(tmp_path, folder):
    """`analyze --out` hands the renderer analysis.json's text instead of reading the file
    back: the same bytes come out, and the same one-line error for a bad record."""
    import shutil
    from pathlib import Path

    from trainprof.report.files import write_reports

    src = Path(__file__).resolve().parents[2] / "data" / "reports" / folder / "analysis.json"
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        shutil.copy(src, d / "analysis.json")
    write_reports(a, name="x")
    write_reports(b, name="x", texts={"analysis.json": src.read_text()})
    for name in ("report.html", "report.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    bad = src.read_text().replace('"schema": "trainprof.analysis/', '"schema": "trainprof.nope/', 1)
    with pytest.raises(InputError, match="schema 'trainprof.nope/"):
        load_folder(b, texts={"analysis.json": bad})
