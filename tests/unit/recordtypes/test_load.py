"""recordtypes: the one loader (base.load) and the typed records' JSON text."""

import json
from pathlib import Path

import pytest

from trainprof import jsontext
from trainprof.errors import InputError
from trainprof.recordtypes.base import load, prefix_of
from trainprof.recordtypes.ettr import Ettr

REPORTS = Path(__file__).resolve().parents[2] / "data" / "reports"


def _write(tmp_path, doc, name="ettr.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def test_shipped_ettr_loads_typed():
    e = load(REPORTS / "cpu_run" / "ettr.json", Ettr)
    # the file: 4 steps in one finished session, 2.15 s productive of 6.80 s wall
    assert (e.sessions, e.failures, e.steps_completed, e.finished) == (1, 0, 4, True)
    assert e.ettr == pytest.approx(2.150819986999977 / 6.803067684173584)
    assert list(e.lost_s)[:2] == ["startup", "checkpointing"]


def test_an_older_record_without_optional_fields_still_loads(tmp_path):
    e = load(_write(tmp_path, {"schema": "trainprof.ettr/1", "ettr": 0.9}), Ettr)
    assert (e.ettr, e.wall_s, e.lost_s, e.sessions, e.finished) == (0.9, None, {}, 0, False)


def test_unknown_fields_from_a_newer_writer_are_ignored(tmp_path):
    assert load(_write(tmp_path, {"schema": "trainprof.ettr/1", "ettr": 0.5, "new_field": [1]}), Ettr).ettr == 0.5


@pytest.mark.parametrize("doc, words", [
    ({"schema": "trainprof.ettr/1", "ettr": 0.5, "lost_s": {"startup": "x"}}, "Expected a number, got `str` at `lost_s[...]`"),
    ({"schema": "trainprof.ettr/1", "ettr": "high"}, "got `str` at `ettr`"),
    ({"schema": "trainprof.ettr/1"}, "missing required field `ettr`"),
    ({"schema": "trainprof.run/1", "ettr": 0.5}, "schema 'trainprof.run/1' is not trainprof.ettr/N"),
    ({"ettr": 0.5}, "schema None is not trainprof.ettr/N"),
    # a long non-string schema is shown by its first 40 bytes (the records fuzzer found it crashing)
    ({"schema": ["x" * 300], "ettr": 0.5}, "schema '[\"" + "x" * 38 + "...' is not trainprof.ettr/N"),
    ([1, 2], "expected a JSON object, found list"),
    ('{"schema": "trainprof.ettr/1", "ettr": NaN}', "not valid JSON"),
    ("", "empty file"),
    ("[" * 300 + "]" * 300, "nested more than 256 levels"),
])
def test_bad_records_are_one_line_naming_the_file_and_the_field(tmp_path, doc, words):
    p = _write(tmp_path, doc)
    with pytest.raises(InputError) as e:
        load(p, Ettr)
    msg = str(e.value)
    assert msg.startswith(f"{p}: ") and words in msg and "\n" not in msg, msg


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    import os

    p = tmp_path / "ettr.json"
    os.mkfifo(p)
    with pytest.raises(InputError, match="FIFO"):
        load(p, Ettr)


def test_the_struct_writes_the_text_the_dict_wrote():
    # same keys, same order (schema first), same values: users' files do not change
    d = json.loads((REPORTS / "cpu_run" / "ettr.json").read_text())
    body = {k: v for k, v in d.items() if k != "schema"}
    assert jsontext.dumps(Ettr(**body)) == jsontext.dumps(d)


def test_prefix_comes_from_the_schema_default():
    assert prefix_of(Ettr) == "trainprof.ettr/"


def test_a_minimal_diff_record_loads_and_renders(tmp_path):
    # report/schemas.py required only step_time_us before diff.json was typed; such a file still renders
    from trainprof.recordtypes.diff import Diff
    from trainprof.report.html import render_html
    from trainprof.report.loader import load_folder
    from trainprof.report.markdown import render_markdown

    _write(tmp_path, {"schema": "trainprof.diff/1", "step_time_us": {"base": 2000.0, "new": 1000.0, "speedup": 2.0}},
           "diff.json")
    d = load(tmp_path / "diff.json", Diff)
    assert (d.base, d.ops.top, d.step_time_us.speedup) == (None, [], 2.0)
    b = load_folder(tmp_path)
    # 2000 µs → 1000 µs is 2.00 ms → 1.00 ms, twice as fast
    assert "Profiled step time 2.00 ms → 1.00 ms: **2.00×**" in render_markdown(b)
    assert "2.00× faster" in render_html(b)


def test_the_diff_record_keeps_the_class_key():
    from trainprof.recordtypes.diff import Changes, Diff, Row, StepTime

    row = Row(name="k", base_us_per_step=1, new_us_per_step=3, delta_us_per_step=2, status="changed", kind="gemm")
    doc = json.loads(jsontext.dumps(Diff(step_time_us=StepTime(base=1), ops=Changes(top=[row]))))
    assert list(doc)[0] == "schema" and doc["schema"] == "trainprof.diff/1"
    assert doc["ops"]["top"][0]["class"] == "gemm" and "kind" not in doc["ops"]["top"][0]


def test_bench_is_read_as_its_kind(tmp_path):
    from trainprof.recordtypes.bench import Bench, MatmulBench

    b = load(REPORTS / "bench" / "bench.json", Bench)
    # the shipped matmul record: fp32 best 0.0225 TFLOP/s at 512³, no `cuda` on a CPU (absent, not null)
    assert type(b) is MatmulBench and b.best["fp32"]["shape"] == "512x512x512"
    assert "cuda" not in json.loads(jsontext.dumps(b))["env"]
    other = load(_write(tmp_path, {"schema": "trainprof.bench/1", "kind": "future", "results": [], "x": 1},
                        "bench.json"), Bench)
    assert type(other) is Bench and other.kind == "future"  # a kind this version does not know still loads
    with pytest.raises(InputError, match="missing required field `results`"):
        load(_write(tmp_path, {"schema": "trainprof.bench/1", "kind": "matmul"}, "bench.json"), Bench)


def test_memory_and_tune_records_write_the_text_their_dicts_wrote():
    # the shipped records, read as dicts and through their Structs, encode to the same text
    import msgspec

    from trainprof.recordtypes.memory import Memory
    from trainprof.recordtypes.tune import Tune

    for name, cls in (("memory/memory.json", Memory), ("tune/tune.json", Tune)):
        d = json.loads((REPORTS / name).read_text())
        if cls is Tune:  # the shipped file predates the evidence's place; the ladder writes it before same_math
            for t in d["trials"]:
                for k in ("same_math", "accuracy_ok", "accepted", "reason", "skipped"):
                    if k in t:
                        t[k] = t.pop(k)
        assert jsontext.dumps(msgspec.convert(d, cls)) == jsontext.dumps(d), name


def test_a_skipped_trial_has_no_measurement_keys():
    from trainprof.recordtypes.base import known
    from trainprof.recordtypes.tune import Trial

    t = Trial(knob="compile", accepted=False, reason="does not apply here (or already set)", skipped=True)
    assert json.loads(jsontext.dumps(t)) == {"knob": "compile", "description": None, "cost": None, "accepted": False,
                                           "reason": "does not apply here (or already set)", "skipped": True}
    assert not known(t.speedup) and not known(None) and known(0.0)


def test_dumps_writes_a_struct_holding_a_str_subclass():
    # torch.__version__ is a TorchVersion; json.dumps cannot write a Struct, so msgspec must
    from trainprof.recordtypes.memory import Memory

    class Version(str):
        pass

    text = jsontext.dumps(Memory(environment={"torch": Version("2.13.0+cpu")}))
    assert json.loads(text)["environment"] == {"torch": "2.13.0+cpu"}


@pytest.mark.parametrize("trace", ["hta_small_edge_cases/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                                   "hta_small_edge_cases/step_based_trace_2543932.json.gz"])
def test_the_analysis_record_reads_back_as_written(trace):
    # the analysers' Structs, encoded once, decode into the same Structs and encode to the
    # same text: every field declared in file order, nothing UNSET written, nothing added
    from trainprof.jobs.analyze import analyze_paths
    from trainprof.recordtypes.analysis import Analysis
    from trainprof.recordtypes.base import decode

    text = jsontext.dumps(analyze_paths([str(REPORTS.parent / "traces" / "real" / trace)]))
    assert jsontext.dumps(decode("analysis.json", text.encode(), Analysis)) == text


def test_an_analysis_json_with_a_block_of_the_wrong_type_is_refused_at_its_path():
    from trainprof.errors import InputError
    from trainprof.recordtypes.analysis import Analysis
    from trainprof.recordtypes.base import decode

    doc = json.loads((REPORTS / "gpu_trace" / "analysis.json").read_text())
    doc["ranks"][0]["top_kernels"][0]["total_us"] = "slow"
    with pytest.raises(InputError, match=r"ranks\[0\]\.top_kernels\[0\]\.total_us"):
        decode("analysis.json", json.dumps(doc).encode(), Analysis)
    # the shipped CPU run's per-step rows carry no GPU columns, and none are added
    cpu = (REPORTS / "cpu_run" / "analysis.json").read_text()
    assert jsontext.dumps(decode("analysis.json", cpu.encode(), Analysis)) == jsontext.dumps(json.loads(cpu))


def test_an_analyser_cannot_build_a_field_its_struct_does_not_declare():
    # the analysers build their Structs (no dict converted on the way to the file): a field
    # an analyser grows without declaring it fails where it is built, never dropped silently
    from trainprof.recordtypes.timeline import LaunchStats

    with pytest.raises(TypeError, match="new_stat"):
        LaunchStats(kernels=1, new_stat=1.0)
