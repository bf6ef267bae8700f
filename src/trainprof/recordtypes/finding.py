"""A finding: one rule's verdict with its evidence (diagnose/), the one type from the rule that
fires to the file and the report (issue #44 item 2). The rules build it with every field; the
engine refines it with `msgspec.structs.replace` (projection, severity cap, host functions);
analysis.json and run.json encode it as it is.

Encoding: the fields in declaration order, one left UNSET not written. A rank's finding always
carries `projected_gain_pct` (null without a what-if scenario); a job finding (stragglers,
late_ranks, pipeline_bubble) leaves it UNSET, so the key is absent there, as it has always been.
The other fields default to UNSET only so a record written by hand or by an older trainprof
still reads."""

from __future__ import annotations

from typing import Optional, Union

from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Num, Part


class Finding(Part, kw_only=True):
    """diagnose/: one rule's verdict with its evidence."""

    id: str
    """fixed per rule (diagnose/registry.py): part of the JSON contract, documented in docs/rules.md"""
    severity: Union[Optional[str], UnsetType] = UNSET
    """high | medium | low | info, from the gain (diagnose/finding.py severity, cap_severity)"""
    title: Union[Optional[str], UnsetType] = UNSET
    evidence: Union[Optional[str], UnsetType] = UNSET
    """numbers and where (step, op, call site)"""
    estimated_gain_pct: Union[Optional[Num], UnsetType] = UNSET
    """share of step time a fix could recover: an UPPER BOUND"""
    fix: Union[Optional[str], UnsetType] = UNSET
    """concrete code or a knob of the reference workload"""
    confidence: Union[Optional[str], UnsetType] = UNSET
    """high | medium | low: how directly the evidence shows the cause"""
    bottleneck: Union[Optional[str], UnsetType] = UNSET
    """one of diagnose/finding.py BOTTLENECKS"""
    projected_gain_pct: Union[Optional[Num], UnsetType] = UNSET
    """the what-if's projection (analysis/graph/projection.py): null without a scenario; absent on job findings"""
