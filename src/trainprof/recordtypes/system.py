"""run.json's "system" block as Structs: the sampled host and GPUs and the energy over the
measured steps (analysis/run/system.summarise_system builds it; docs/system.md explains it).

The wire form is the one the block had as a dict, byte for byte: fields in the order the
summariser writes its keys, a key the summariser writes only when it has a reading is absent
otherwise (`omit_defaults`: the default None is never written, and those keys are never written
as null), a key always written (null, 0, {} or not) has no default, since a default equal to
the value would be left out. Three states (UNSET) remain only
where a key is both sometimes absent and sometimes null: energy's `window` (absent in records
written before fcd7578, the schema was not bumped) and the per-step/per-token energies (absent
without that energy, null without steps or tokens).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Num, Wire


class MeanMax(Wire, frozen=True, kw_only=True):
    mean: Num
    max: Num


class WorkersCpu(MeanMax, frozen=True, kw_only=True):
    """The DataLoader workers' CPU, % of one core per worker (diagnose/flowchart.py)."""

    workers_max: Num


class GpuSummary(Wire, frozen=True, kw_only=True):
    """One GPU over the readings covering the measured steps (`scope`), else the whole run;
    the `*_max` of memory and temperature are the whole run's."""

    index: int
    scope: Optional[str] = None  # "measured steps" | "whole run" (absent before 14ab674)
    util_pct_mean: Optional[Num] = None
    util_pct_max: Optional[Num] = None
    mem_util_pct_mean: Optional[Num] = None
    mem_util_pct_max: Optional[Num] = None
    sm_clock_mhz_mean: Optional[Num] = None
    sm_clock_mhz_max: Optional[Num] = None
    power_w_mean: Optional[Num] = None
    power_w_max: Optional[Num] = None
    mem_used_bytes_max: Optional[Num] = None
    temp_c_max: Optional[Num] = None
    energy_j: Optional[Num] = None  # integrated power over the window
    energy_counter_j: Optional[Num] = None  # the board's counter over the window


class Energy(Wire, frozen=True, kw_only=True):
    """Energy over the measured window; per part ("gpu", "cpu") either joules with their source
    and coverage, or why they are unavailable."""

    window_s: Num
    window: Union[list[Num], None, UnsetType] = UNSET  # [start, end] on the samples' t_s axis
    steps: int
    tokens: int
    gpu_j: Optional[Num] = None
    gpu_counter_j: Optional[Num] = None
    gpu_source: Optional[str] = None
    gpu_coverage: Optional[Num] = None
    gpu_power_integral_j: Optional[Num] = None
    gpu_unavailable: Optional[str] = None
    cpu_j: Optional[Num] = None
    cpu_coverage: Optional[Num] = None
    cpu_source: Optional[str] = None
    cpu_unavailable: Optional[str] = None
    gpu_note: Optional[str] = None
    gpu_j_per_step: Union[Num, None, UnsetType] = UNSET
    gpu_j_per_token: Union[Num, None, UnsetType] = UNSET
    cpu_j_per_step: Union[Num, None, UnsetType] = UNSET
    cpu_j_per_token: Union[Num, None, UnsetType] = UNSET

    def part(self, name: str, field: str) -> Any:
        """`gpu_j`, `cpu_source`, ...: one part's field by name (the renderers loop over parts);
        None where the record has no value."""
        v = getattr(self, f"{name}_{field}", None)
        return None if v is UNSET else v


class SystemSummary(Wire, frozen=True, kw_only=True):
    n_samples: int
    duration_s: Num
    cpu_util_pct: Optional[MeanMax]
    others_cpu_pct: Optional[MeanMax] = None  # contention (diagnose: contended_machine)
    steal_pct: Optional[MeanMax] = None
    load_avg_1m: Optional[MeanMax] = None
    workers_cpu_pct: Optional[WorkersCpu] = None
    rss_bytes_max: Optional[int]
    children_rss_bytes_max: Optional[int]
    disk_read_bytes: Optional[int] = None  # machine counters between the first and last sample
    disk_write_bytes: Optional[int] = None
    net_rx_bytes: Optional[int] = None
    net_tx_bytes: Optional[int] = None
    gpus: list[GpuSummary]
    energy: Energy


class System(Wire, frozen=True, kw_only=True):
    """The samples as the sampler took them (collect/sampler.py: host and per-GPU readings,
    kept open: the sensors present vary by machine), what was unavailable, and the summary."""

    interval_s: Num
    samples: list[dict[str, Any]]
    unavailable: dict[str, str]
    errors: dict[str, str]
    summary: SystemSummary
