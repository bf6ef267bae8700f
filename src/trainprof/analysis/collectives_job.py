"""Collectives across ranks: who arrived last, how long the others waited, what bandwidth.

Input: each rank's `collectives` block (analysis/collectives.py). A collective is the same
(group, op, k) on every rank. Per collective, with times on rank 0's clock:

    arrival_r = start of rank r's kernel (or gloo op)        end_r = its end
    skew      = max_r arrival_r − min_r arrival_r            (how far apart the ranks came)
    wait_r    = max_r' arrival_r' − arrival_r                (time r spun for the last one)
    latency   = min_r (end_r − arrival_r)                    (the last arriver's duration:
                                                              transfer time without waiting)
    algbw     = S / latency,  busbw = algbw · factor(op, n)  (nccl-tests, analysis/busbw.py)
    overlap   = median_r (share of [arrival_r, end_r] that rank r spent on compute)

Per (group, op): medians of the above, and the aggregate busbw Σ S / Σ latency × factor — the
figure nccl-tests and `trainprof bench allreduce` report (they time a loop: a mean).

Clock alignment: each rank's trace has its own clock. A collective ends at (nearly) the same
instant on every rank — no rank can finish before the last one's data arrived — so the
offset of rank r is the median over matched collectives of (end_r − end_0); the median
ignores the few collectives whose ends differ (a send/recv pair, a rank descheduled at the
end). TraceLens' NCCL analyser uses the same end-alignment idea.

The last-arriving rank of every collective is counted per job; `stragglers` (diagnose/
job_rules.py) names ranks that account for a large share of all the waits they caused.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from trainprof.analysis.busbw import FACTORS, bus_factor
from trainprof.analysis.lateness import step_lateness

SCHEMA = "trainprof.collectives_job/1"
SLOWEST = 20  # rows of the slowest-collectives table (by skew); the summary covers them all


def _keys(block: dict) -> dict[tuple, int]:
    return {(g, op, k): i for i, (g, op, k) in enumerate(zip(block["group"], block["op"], block["seq"]))}


def clock_offsets(blocks: dict[int, dict], matched: list[tuple]) -> dict[int, float]:
    """Per rank, µs to subtract to bring its clock onto the reference (lowest) rank's."""
    ref = min(blocks)
    keys = {r: _keys(b) for r, b in blocks.items()}
    out = {}
    for r, b in blocks.items():
        diffs = [b["end_us"][keys[r][k]] - blocks[ref]["end_us"][keys[ref][k]]
                 for k in matched if k in keys[r] and k in keys[ref]]
        out[r] = statistics.median(diffs) if diffs else 0.0
    return out


def job_collectives(blocks: dict[int, dict]) -> dict | None:
    """Match the ranks' collectives; None with fewer than two ranks holding collectives."""
    blocks = {r: b for r, b in blocks.items() if b and b.get("op")}
    if len(blocks) < 2:
        return None
    return _job(blocks, *match(blocks))


def match(blocks: dict[int, dict]) -> tuple[list[dict], dict, dict]:
    """Per matched collective (in (group, op, seq) order) its row; the per-rank wait tallies;
    the clock offsets. `blocks`: rank -> collectives block, at least two."""
    keys = {r: _keys(b) for r, b in blocks.items()}
    counts = {r: len(k) for r, k in keys.items()}
    matched = sorted(set.intersection(*(set(k) for k in keys.values())), key=lambda k: (k[0], k[1], k[2]))
    offsets = clock_offsets(blocks, matched)
    ranks = sorted(blocks)
    n = len(ranks)
    waits = defaultdict(float)          # rank -> µs spent waiting for the last arriver
    caused = defaultdict(float)         # rank -> µs the others waited for it (when it was last)
    last_count = defaultdict(int)
    rows = []
    for key in matched:
        arrive, end = [], []
        for r in ranks:
            i = keys[r][key]
            arrive.append(blocks[r]["start_us"][i] - offsets[r])
            end.append(blocks[r]["end_us"][i] - offsets[r])
        last_i = max(range(n), key=arrive.__getitem__)
        first = min(arrive)
        latest = arrive[last_i]
        for j, r in enumerate(ranks):
            w = latest - arrive[j]
            waits[r] += w
            caused[ranks[last_i]] += w
        last_count[ranks[last_i]] += 1
        latency = min(e - a for a, e in zip(arrive, end))
        size = next((blocks[r]["bytes"][keys[r][key]] for r in ranks
                     if blocks[r]["bytes"][keys[r][key]] is not None), None)
        op = key[1]
        # the group's real size (a job analysed from a sample of its ranks keeps its factor)
        size_n = max([blocks[r].get("group_size", {}).get(key[0]) or 0 for r in ranks] + [n])
        alg = size / (latency * 1e-6) / 1e9 if size and latency > 0 else None
        bus = alg * bus_factor(op, size_n) if alg is not None and op in FACTORS else None
        ov = [p for p in (_at(blocks[r].get("compute_overlap_pct"), keys[r][key]) for r in ranks) if p is not None]
        rows.append({"group": key[0], "op": op, "seq": key[2], "bytes": size,
                     "skew_us": latest - first, "latency_us": latency,
                     "end_skew_us": max(end) - min(end), "last_rank": ranks[last_i],
                     "algbw_gbs": alg, "busbw_gbs": bus,
                     "compute_overlap_pct": statistics.median(ov) if ov else None})
    tallies = {"keys": keys, "counts": counts, "matched": matched, "waits": waits, "caused": caused,
               "last_count": last_count}
    return rows, tallies, offsets


def _at(column: list | None, i: int):
    """column[i], None when the column is absent (a block written before it existed)."""
    return column[i] if column is not None and i < len(column) else None


def _job(blocks: dict[int, dict], rows: list[dict], tallies: dict, offsets: dict) -> dict:
    ranks = sorted(blocks)
    n = len(ranks)
    counts, matched = tallies["counts"], tallies["matched"]
    waits, caused, last_count = tallies["waits"], tallies["caused"], tallies["last_count"]
    total_wait = sum(waits.values())
    per_rank = [{"rank": r, "collectives": counts[r], "wait_us": waits[r], "caused_wait_us": caused[r],
                 "last_count": last_count[r],
                 "caused_share_pct": 100.0 * caused[r] / total_wait if total_wait > 0 else 0.0,
                 "clock_offset_us": offsets[r]} for r in ranks]
    return {
        "schema": SCHEMA,
        "ranks": n,
        # analysed ranks < the job's world size: waits and skews are among these ranks only
        "world_size": max([max(b.get("group_size", {}).values() or [0]) for b in blocks.values()] + [n]),
        "matched": len(matched),
        "unmatched": {str(r): counts[r] - len(matched) for r in ranks if counts[r] != len(matched)},
        "consistent": len(set(counts.values())) == 1 and counts[ranks[0]] == len(matched),
        "total_wait_us": total_wait,
        # the reference rank's window from its first collective's arrival to its last's end:
        # what "share of the time" means for the job findings
        "span_us": max(blocks[ranks[0]]["end_us"]) - min(blocks[ranks[0]]["start_us"]),
        "per_rank": per_rank,
        "lateness": step_lateness(blocks, offsets),
        "groups": _summaries(rows),
        "slowest": sorted(rows, key=lambda x: -x["skew_us"])[:SLOWEST],
    }


def _summaries(rows: list[dict]) -> list[dict]:
    by: dict[tuple, list[dict]] = defaultdict(list)
    for x in rows:
        by[(x["group"], x["op"])].append(x)
    out = []
    for (group, op), xs in sorted(by.items()):
        bus = [x["busbw_gbs"] for x in xs if x["busbw_gbs"] is not None]
        out.append({"group": group, "op": op, "count": len(xs),
                    "bytes": sum(x["bytes"] or 0 for x in xs),
                    "median_latency_us": statistics.median(x["latency_us"] for x in xs),
                    "median_skew_us": statistics.median(x["skew_us"] for x in xs),
                    "max_skew_us": max(x["skew_us"] for x in xs),
                    "median_busbw_gbs": statistics.median(bus) if bus else None,
                    "aggregate_busbw_gbs": _aggregate_busbw(xs),
                    "median_compute_overlap_pct": _median([x.get("compute_overlap_pct") for x in xs])})
    return out


def _median(values: list) -> float | None:
    vs = [v for v in values if v is not None]
    return statistics.median(vs) if vs else None


def _aggregate_busbw(xs: list[dict]) -> float | None:
    """Σ S / Σ latency × factor over a group's collectives of one op: the bandwidth of all of
    them taken together, the figure nccl-tests (and `trainprof bench`) report, which time a
    loop and divide by the count — a mean, where `median_busbw_gbs` is a median. Only rows
    with a size and a busbw count (the factor is the op's for the group's size)."""
    sized = [x for x in xs if x["bytes"] and x["busbw_gbs"] is not None and x["algbw_gbs"]]
    if not sized:
        return None
    factor = sized[0]["busbw_gbs"] / sized[0]["algbw_gbs"]
    total_s = sum(x["latency_us"] for x in sized) * 1e-6
    return sum(x["bytes"] for x in sized) / total_s / 1e9 * factor if total_s > 0 else None
