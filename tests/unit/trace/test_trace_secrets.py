"""Nothing outside the allow-list reaches a Trace: a planted token must be nowhere in it.

Real traces embed the environment (the TraceLens HF traces carried an HF_TOKEN in
metadata.system...env before redaction), so the token is planted in every place a trace can
hide one: top-level metadata, unused args of complete/instant/metadata/flow events, extra
keys of deviceProperties and distributedInfo.
"""

import dataclasses
import json
import pickle
import random
import string

import numpy as np

from trainprof.trace import find_steps, link, read_trace


def _token() -> str:
    rng = random.Random(1234)
    return "hf_" + "".join(rng.choice(string.ascii_letters) for _ in range(34))


def _walk(obj, seen=None):
    """Every string reachable from obj (dataclass fields, containers, numpy arrays)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, bytes):
        yield obj.decode("latin-1")
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _walk(getattr(obj, f.name), seen)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(k, seen)
            yield from _walk(v, seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            yield from _walk(v, seen)
    elif isinstance(obj, np.ndarray):
        if obj.dtype.kind in "OUS":
            for v in obj.ravel().tolist():
                yield from _walk(v, seen)
    else:
        yield repr(obj)


def test_planted_token_never_reaches_the_trace(tmp_path):
    tok = _token()
    doc = {
        "schemaVersion": 1,
        "metadata": {"system": {"env": {"HF_TOKEN": tok, "OPENAI_API_KEY": tok}}},
        "username": tok,
        "hostname": f"host-{tok}",
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "numSms": 108, "uuid": tok}],
        "distributedInfo": {"rank": 0, "world_size": 2, "backend": "nccl",
                            "pg_config": [{"pg_name": "0", "pg_desc": tok, "ranks": [0, 1]}]},
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": tok}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50,
             "args": {"External id": 1, "Call stack": tok, "Module Hierarchy": tok, "env": {"TOKEN": tok}}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
             "args": {"correlation": 3, "secret": tok}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 10,
             "args": {"correlation": 3, "stream": 7, "device": 0, "note": tok}},
            {"ph": "s", "id": 3, "pid": 1, "tid": 1, "ts": 20, "cat": "ac2g", "name": tok},
            {"ph": "f", "id": 3, "pid": 0, "tid": 7, "ts": 30, "cat": "ac2g", "name": tok, "bp": "e"},
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 15, "s": "t",
             "args": {"leak": tok}},
        ],
        "traceName": f"/tmp/{tok}/trace.json",
    }
    p = tmp_path / "planted.json"
    p.write_text(json.dumps(doc))
    tr = read_trace(p)
    assert len(tr) == 3 and tr.device_name == "NVIDIA A100-SXM4-80GB"  # the allowed facts did arrive

    ln = link(tr)
    steps = find_steps(tr, ln)
    for obj in (tr, ln, steps):
        assert tok not in repr(obj)
        assert not any(tok in s for s in _walk(obj))
        assert tok.encode() not in pickle.dumps(obj)  # everything reachable, in one place
