"""Planted truths for the job analysis: one real rank's trace copied into N ranks, then edited
to a known answer (a shifted window, a delayed rank, an offset clock). Helpers for
tests/integration/test_collectives_planted.py and test_job_invariants.py.

Every edit keeps the physics of a collective: it ends together on every rank (a rank that
arrives late makes the others' kernels longer, not earlier), so the right answer is known
before the analysis runs.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

from trainprof.analysis.job.collectives import rank_collectives
from trainprof.analysis.job.collectives_job import job_collectives
from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.collectives import RankCollectives
from trainprof.trace import read_trace

from tests.plain import plain

REAL = Path(__file__).parents[1] / "data" / "traces" / "real"
NCCL_A100 = REAL / "hta_ddp_2rank_nccl_a100" / "nccl_data.json.gz"  # 21 collectives, 3 steps of 7
MI300 = REAL / "tracelens_mi300_resnet_ddp_8rank_rank0" / "resnet_act_checkpoint.json.gz"
RECSYS = REAL / "hta_recsys_128rank_nccl_a100" / "sampled_rank-0.json.gz"  # no collective args
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")


# Not read by the job analysis: Python frames, forward-backward and CPU-to-GPU flows (every
# GPU event of these traces carries its correlation id), and the CPU ops other than the
# collective calls (an arg-less kernel's op comes from its c10d call). Leaving them out makes
# a planted job ~4× cheaper to write and read.
UNUSED_CATS = ("python_function", "fwdbwd", "ac2g")


def _used(e: dict) -> bool:
    cat = e.get("cat")
    if cat == "cpu_op":
        return e.get("name", "").startswith(("c10d::", "record_param_comms"))
    return cat not in UNUSED_CATS


@functools.lru_cache(maxsize=None)
def _load(path: Path) -> str:
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if _used(e)]
    return json.dumps(doc)


def load(path: Path) -> dict:
    """A real trace without the categories the job analysis does not read (a fresh copy)."""
    return json.loads(_load(path))


def copies(doc: dict, n: int) -> list[dict]:
    """n copies an edit can change independently (the edits touch ts and dur only)."""
    return [{**doc, "traceEvents": [dict(e) for e in doc["traceEvents"]]} for _ in range(n)]


def nccl(doc: dict) -> list[dict]:
    """The communication kernels, in time order."""
    return sorted((e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower()),
                  key=lambda e: e["ts"])


def cut(doc: dict, start: float | None = None, end: float | None = None) -> None:
    """The profiler window opened at `start` / closed at `end`: events outside it are gone."""
    keep = []
    for e in doc["traceEvents"]:
        ts = e.get("ts")
        if ts is None or e.get("ph") == "M" or ((start is None or ts >= start) and (end is None or ts < end)):
            keep.append(e)
    doc["traceEvents"] = keep


def shift(doc: dict, delta_us: float, after: float = float("-inf"), cats: tuple | None = None) -> None:
    """ts += delta for the events at or after `after` (of the categories `cats`; None: all)."""
    for e in doc["traceEvents"]:
        if "ts" in e and e.get("ph") != "M" and e["ts"] >= after and (cats is None or e.get("cat") in cats):
            e["ts"] += delta_us


def delay(docs: list[dict], culprit: int, k: int, delta_us: float, after: float | None = None) -> None:
    """Rank `culprit` reaches its k-th collective delta later: its GPU work from the end of
    collective k−1 on moves by delta (with `after`: all its work, host too, from then on);
    every other rank's k-th kernel lasts delta longer (it waits) and its GPU work after it
    moves by delta."""
    mine = nccl(docs[culprit])
    if after is None:
        start = mine[k - 1]["ts"] + mine[k - 1]["dur"] if k else mine[k]["ts"] - 1
        shift(docs[culprit], delta_us, after=start, cats=GPU_CATS)
    else:
        shift(docs[culprit], delta_us, after=after)
    for r, d in enumerate(docs):
        if r != culprit:
            kern = nccl(d)[k]
            end = kern["ts"] + kern["dur"]
            shift(d, delta_us, after=end, cats=GPU_CATS)
            kern["dur"] += delta_us


def steps(doc: dict) -> list[dict]:
    """The host's ProfilerStep annotations, in time order."""
    return sorted((e for e in doc["traceEvents"] if e.get("cat") == "user_annotation"
                   and e.get("name", "").startswith("ProfilerStep#")), key=lambda e: e["ts"])


def host_late(doc: dict, delta_us: float) -> None:
    """The rank's host runs delta later (its CPU run-ahead is delta shorter); its GPU work
    keeps its times."""
    for e in doc["traceEvents"]:
        if "ts" in e and e.get("ph") != "M" and e.get("cat") not in GPU_CATS:
            e["ts"] += delta_us


def jitter(docs: list[dict], us: float = 4.0) -> None:
    """Lock-step noise: each rank arrives at each collective 0–`us` µs later (a fixed pattern),
    the end unchanged: every rank is last somewhere, by microseconds."""
    for r, d in enumerate(docs):
        for k, kern in enumerate(nccl(d)):
            u = us * (((r + 1) * 7919 + k * 104729) % 1000) / 1000.0
            kern["ts"] += u
            kern["dur"] -= u


def blocks(docs: list[dict], tmp_path: Path) -> dict[int, RankCollectives]:
    """Each rank's collectives block, read back from a written trace."""
    out = {}
    for r, d in enumerate(write(docs, tmp_path)):
        out[r] = rank_collectives(Context.build(read_trace(str(d))))
    return out


def write(docs: list[dict], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, d in enumerate(docs):
        d = dict(d)
        d["distributedInfo"] = {**(d.get("distributedInfo") or {}), "rank": r, "world_size": len(docs)}
        p = folder / f"rank{r}.json"
        p.write_text(json.dumps(d, separators=(",", ":")))
        paths.append(p)
    return paths


def job(docs: list[dict], tmp_path: Path) -> dict:
    """The job's collectives as analysis.json holds them."""
    return plain(job_collectives(blocks(docs, tmp_path)))


def _collective_ops(doc: dict) -> list[dict]:
    """Each communication kernel's record_param_comms op (None where not found): the runtime
    call with the kernel's correlation id, then the record_param_comms enclosing that call
    on its thread."""
    evs = doc["traceEvents"]
    launch = {e["args"]["correlation"]: e for e in evs
              if e.get("cat") == "cuda_runtime" and "correlation" in (e.get("args") or {})}
    ops = [e for e in evs if e.get("name") == "record_param_comms"]
    out = []
    for k in nccl(doc):
        call = launch.get((k.get("args") or {}).get("correlation"))
        out.append(next((o for o in ops if call is not None and o["tid"] == call["tid"]
                         and o["ts"] <= call["ts"] <= o["ts"] + o["dur"]), None))
    return out


def number(doc: dict, first: int, on: str = "kernel") -> None:
    """Record PyTorch's sequence number: the k-th collective of the (one) process group gets
    "Seq": first + k in the args of its kernel (on="kernel", as recent Kineto copies it there)
    or of its record_param_comms op (on="op", where PyTorch writes it)."""
    targets = nccl(doc) if on == "kernel" else _collective_ops(doc)
    for k, e in enumerate(targets):
        e["args"] = {**e["args"], "Seq": first + k}


def alike(doc: dict) -> None:
    """Every collective the same signature (an all_reduce of 1,000 floats), kernel and op."""
    for e in doc["traceEvents"]:
        if "Collective name" in (e.get("args") or {}):
            e["args"] = {**e["args"], "Collective name": "allreduce", "In msg nelems": 1000,
                         "Out msg nelems": 1000, "dtype": "Float"}


def drop_steps(doc: dict) -> None:
    """No ProfilerStep annotations: no step numbers to pair by."""
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not e.get("name", "").startswith("ProfilerStep#")]
