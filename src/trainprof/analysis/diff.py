"""Before/after comparison of two analysed traces (`trainprof diff BASE NEW`).

Times are normalised per profiler step (a trace without steps counts as one), so a base
of 5 steps and a new trace of 3 compare fairly. A name present on one side only is
"added" or "removed". Sorted by absolute change, biggest first.
"""

from __future__ import annotations


def _per_step(rank: dict) -> float:
    return float(max(1, rank["steps"]))


def _table(rows: list[dict], n: float, key: str = "name") -> dict[str, dict]:
    return {r[key]: {"total_us": r["total_us"] / n, "count": r.get("calls", r.get("count", 0)) / n,
                     "class": r.get("class")} for r in rows}


def _delta(base: dict[str, dict], new: dict[str, dict], top: int) -> dict:
    names = set(base) | set(new)
    rows = []
    for n in names:
        b = base.get(n, {}).get("total_us", 0.0)
        a = new.get(n, {}).get("total_us", 0.0)
        rows.append({"name": n, "base_us_per_step": b, "new_us_per_step": a, "delta_us_per_step": a - b,
                     "change_pct": 100.0 * (a - b) / b if b > 0 else None,
                     "status": "added" if n not in base else "removed" if n not in new else "changed",
                     "class": (new.get(n) or base.get(n) or {}).get("class")})
    rows.sort(key=lambda r: -abs(r["delta_us_per_step"]))
    return {
        "top": rows[:top],
        "added": sorted((r["name"] for r in rows if r["status"] == "added"))[:top],
        "removed": sorted((r["name"] for r in rows if r["status"] == "removed"))[:top],
        "n_added": sum(r["status"] == "added" for r in rows),
        "n_removed": sum(r["status"] == "removed" for r in rows),
    }


def diff_ranks(base: dict, new: dict, top: int = 10) -> dict:
    nb, nn = _per_step(base), _per_step(new)
    sb, sn = base["step_time_us"], new["step_time_us"]
    tb, tn = base["temporal_breakdown"], new["temporal_breakdown"]
    parts = {}
    for p in ("compute", "communication", "memcpy", "memset", "idle"):
        parts[p] = {"base_us_per_step": tb[f"{p}_us"] / nb, "new_us_per_step": tn[f"{p}_us"] / nn,
                    "delta_us_per_step": tn[f"{p}_us"] / nn - tb[f"{p}_us"] / nb}
    return {
        "base": {"file": base["file"], "device_name": base["device_name"], "steps": base["steps"]},
        "new": {"file": new["file"], "device_name": new["device_name"], "steps": new["steps"]},
        "step_time_us": {"base": sb, "new": sn,
                         "speedup": (sb / sn) if sb and sn else None,
                         "change_pct": 100.0 * (sn - sb) / sb if sb and sn else None},
        "temporal_breakdown": parts,
        "ops": _delta(_table(base["top_ops"], nb), _table(new["top_ops"], nn), top),
        "kernels": _delta(_table(base["top_kernels"], nb), _table(new["top_kernels"], nn), top),
    }
