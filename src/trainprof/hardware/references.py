"""The reference figures beside a user's numbers (references.toml): MFU bands and Megatron-LM's
MFU/HFU table, ETTR of published large jobs, the stop criterion, link bandwidths. Pure: numbers
in, labelled references out; each with its source (docs/metrics.md "Reference context")."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    text = resources.files("trainprof.hardware").joinpath("references.toml").read_text("utf-8")
    return tomllib.loads(text)


@dataclass(frozen=True)
class Link:
    key: str
    name: str
    gbs: float  # per direction, the unit of a collective's bus bandwidth
    source: str


def links() -> dict[str, Link]:
    return {r["key"]: Link(r["key"], r["name"], float(r["gbs"]), r["source"]) for r in table()["link"]}


def link(key: str | None) -> Link | None:
    """The link named by `--link` (nvlink4, pcie5, ndr, ...); None for None."""
    if key is None:
        return None
    found = links().get(key.strip().lower())
    if found is None:
        raise ValueError(f"unknown link {key!r}: one of {', '.join(links())}")
    return found


def device_link(spec_key: str | None, ranks: int) -> Link | None:
    """The link `ranks` ranks of the device `spec_key` use when they fit in one node (the
    device_link table); None when the device has no row or the job is wider than a node."""
    dl = table()["device_link"]
    key = dl.get(spec_key) if spec_key else None
    if key is None or ranks > int(dl["node_max_ranks"]):
        return None
    return links()[key]


def link_fraction(busbw_gbs: float | None, lk: Link | None) -> float | None:
    """The share of the link's per-direction bandwidth a collective's bus bandwidth reached."""
    if busbw_gbs is None or lk is None:
        return None
    return float(busbw_gbs) / lk.gbs


def mfu_band(mfu: float | None) -> str | None:
    """The band an MFU (a fraction) falls in, or None without one."""
    if mfu is None:
        return None
    label = None
    for b in table()["mfu_band"]:
        if mfu >= b["from"]:
            label = b["label"]
    return label


def mfu_table_text() -> str:
    """Megatron-LM's published MFU/HFU, one line, with its source."""
    rows = ", ".join(f"{r['model']} {100 * r['mfu']:.1f}%/{100 * r['hfu']:.1f}%" for r in table()["mfu_table"])
    return f"Megatron-LM on A100-80GB, MFU/HFU: {rows} ({table()['mfu_table_source']['text']})"


def ettr_text() -> str:
    return "; ".join(f"{e['who']} {100 * e['ettr']:.0f}% ({e['source']})" for e in table()["ettr"])


def stop_pct() -> float:
    return float(table()["stop"]["achievable_pct"])


def stop_criterion(pct_of_achievable: float | None) -> str | None:
    """The tune/study verdict: None when the % of achievable is unknown."""
    if pct_of_achievable is None:
        return None
    s = stop_pct()
    if pct_of_achievable >= s:
        return (f"at {pct_of_achievable:.0f}% of the achievable (≥ {s:.0f}%): further tuning is unlikely to pay; "
                f"train ({table()['stop']['source']})")
    return (f"at {pct_of_achievable:.0f}% of the achievable (< {s:.0f}%): room left before tuning stops paying "
            f"({table()['stop']['source']})")


def context(mfu: float | None, pct_of_achievable: float | None, achievable_basis: str,
            ettr: float | None = None) -> list[dict[str, str]]:
    """Rows {figure, value, reference} for the terminal, report.md and report.html."""
    rows = []
    if mfu is not None:
        rows.append({"figure": "MFU", "value": f"{100 * mfu:.1f}%",
                     "reference": f"{mfu_band(mfu)}; seed 000: ~50% when well optimised; {mfu_table_text()}"})
    if pct_of_achievable is not None:
        rows.append({"figure": "% of achievable", "value": f"{pct_of_achievable:.1f}%",
                     "reference": f"{achievable_basis}; {stop_criterion(pct_of_achievable)}"})
    if ettr is not None:
        rows.append({"figure": "ETTR", "value": f"{100 * ettr:.1f}%", "reference": ettr_text()})
    return rows
