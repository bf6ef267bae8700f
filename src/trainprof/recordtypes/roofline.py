"""The roofline parts of a rank in analysis.json (analysis/cost/): the roofs (`roofline`), the
by-shape points (`roofline_points`, roofline.py) and a top operator's place on the roofline
(`top_ops[].roofline`, roofline_top.py). The formulas are in those modules' docstrings.

`ncu` (NcuBlock) is analysis.json's Nsight Compute block. A field a later version added is UNSET when absent, so an older record reads as it was
written (its points lack `class`, `estimated`, `achieved_gbs`, `note`).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Num, Part


class RooflineHeader(Part, kw_only=True):
    """The roofs the points are judged against (analysis/cost/roofline.roofline_header)."""

    peak_tflops: Union[Optional[Num], UnsetType] = UNSET
    peak_bandwidth_gbs: Union[Optional[Num], UnsetType] = UNSET
    ridge_flop_per_byte: Union[Optional[Num], UnsetType] = UNSET
    dtype: Union[Optional[str], UnsetType] = UNSET
    source: Union[Optional[str], UnsetType] = UNSET
    """datasheet:<spec key> | measured on this machine | user | unknown"""
    peaks_by_dtype: Union[dict[str, Num], UnsetType] = UNSET
    hint: Union[Optional[str], UnsetType] = UNSET


class OpRoofline(Part, kw_only=True):
    """A top operator on the roofline, priced over all its calls against its own total_us
    (analysis/cost/roofline_top.py); FLOPs None when no call has a formula and shapes."""

    calls: Optional[int] = None
    calls_priced: Optional[int] = None
    flops: Optional[Num] = None
    bytes: Optional[Num] = None
    intensity: Optional[Num] = None
    """FLOP/byte"""
    achieved_tflops: Optional[Num] = None
    attainable_tflops: Optional[Num] = None
    roofline_pct: Optional[Num] = None
    bound: Optional[str] = None
    """compute | memory | latency"""
    dtype: Optional[str] = None
    tensor_core: Union[bool, UnsetType] = UNSET
    note: Optional[str] = None


class RooflinePoint(Part, kw_only=True):
    """One (op, input dims, input types) group of calls on the roofline
    (analysis/cost/roofline.roofline_points): its FLOPs and bytes per call from the shapes, its
    device time summed over the calls. attainable/roofline_pct/bound are None where a roof is
    unknown."""

    name: str
    input_dims: Any = None
    """as the trace recorded them: a list per input (nested lists of ints, or [] for a scalar)"""
    input_types: Any = None
    count: int
    """calls in the group"""
    device_time_us: Num
    flops: Num
    """per call"""
    bytes: Num
    """per call (minimum traffic: each input read and each output written once)"""
    intensity: Num
    """FLOP/byte"""
    dtype: Optional[str] = None
    """the roof's dtype (tf32 where an fp32 op ran on Tensor Cores)"""
    tensor_core: Union[bool, UnsetType] = UNSET
    achieved_tflops: Num
    attainable_tflops: Optional[Num] = None
    roofline_pct: Optional[Num] = None
    bound: Optional[str] = None
    """compute | memory | latency"""
    achieved_gbs: Union[Num, UnsetType] = UNSET
    kind: Union[Optional[str], UnsetType] = msgspec.field(default=UNSET, name="class")
    """the class of its longest kernel (of the op's name on a CPU trace); "class" in the file"""
    estimated: Union[bool, UnsetType] = UNSET
    """the FLOP count rests on an assumption (named in `note`)"""
    note: Union[Optional[str], UnsetType] = UNSET
    """why the point is an estimate or above its roof (None: nothing to say)"""


class NcuPoint(Part, kw_only=True):
    """One kernel name measured by Nsight Compute, on the roofline (analysis/cost/ncu.ncu_points):
    its FLOPs and DRAM bytes per launch as ncu counted them, its time summed over the launches.
    attainable/roofline_pct/bound are None where a roof is unknown."""

    name: str
    count: int
    """launches"""
    device_time_us: Num
    flops: Num
    """per launch"""
    bytes: Num
    """DRAM bytes per launch"""
    intensity: Optional[Num] = None
    """FLOP/byte; None without DRAM traffic"""
    dtype: Optional[str] = None
    tensor_core: bool
    achieved_tflops: Num
    achieved_gbs: Num
    attainable_tflops: Optional[Num] = None
    roofline_pct: Optional[Num] = None
    bound: Optional[str] = None
    """compute | memory | latency"""
    source: str = "ncu"


class NcuBlock(Part, kw_only=True):
    """analysis.json's `ncu` (`analyze --ncu CSV`, jobs/ncu.py): Nsight Compute's kernels on
    the roofline, against the roofs of the CSV's device (else the trace's)."""

    file: str
    device_name: Optional[str] = None
    kernels: int
    """kernel launches in the CSV"""
    roofline: RooflineHeader
    points: list[NcuPoint]
