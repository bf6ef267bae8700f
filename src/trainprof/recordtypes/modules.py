"""The per-module block of a rank in analysis.json (analysis/cost/modules.py)."""

from __future__ import annotations

from typing import Optional, Union

from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Num, Part


class ModuleRow(Part, kw_only=True):
    """One module type (every `Block`, every `Linear`), times per step."""

    module: str
    """the class name (`Block` gathers Block_0, Block_1, ...)"""
    instances: int
    calls_per_step: Num
    forward_us: Num
    """inclusive: child modules' time included (a type nested in itself counts once per range)"""
    backward_us: Num
    """inclusive: autograd nodes whose forward op ran inside the module (fwdbwd links)"""
    self_us: Num
    """forward + backward outside any child module: the column that ranks and adds up"""
    share_pct: Num
    """self_us / the table's total self time; the rows sum to 100"""
    flops: Union[Optional[Num], UnsetType] = UNSET
    """priced ops' FLOPs outside child modules, forward + backward, per step (op_cost.py)"""
    tflops: Union[Optional[Num], UnsetType] = UNSET
    mfu_pct: Union[Optional[Num], UnsetType] = UNSET
    """flops / self time / the dense peak of the dominant dtype (None: no peak known)"""


class ModuleTable(Part, kw_only=True):
    source: str
    """"trainprof ranges" (record_function, collect/module_scopes.py) or "with_modules" (Python tracer)"""
    time: str
    """"host" (op ranges on the CPU) or "device" (kernels by their launch's module)"""
    steps: int
    total_self_us: Num
    """per step: the sum of the rows' self_us (= the outermost modules' forward + backward)"""
    backward_linked_pct: Union[Optional[Num], UnsetType] = UNSET
    """share of autograd node time whose forward op lay in a module; None: no backward recorded"""
    rows: list[ModuleRow]
    pattern: Union[Optional[str], UnsetType] = UNSET
    """analyze --modules: only matching types are listed (shares stay of the whole table)"""


class HostFunction(Part, kw_only=True):
    """One Python function in py-spy's samples of the host (analysis/timeline/host_stacks.py)."""

    function: str
    """`name (file)`: py-spy's frame without its line (the line moves between samples)"""
    self_pct: Num
    """samples whose innermost frame is this function, % of all samples"""
    total_pct: Num
    """samples with this function anywhere on the stack (counted once per sample), %"""


class HostStacks(Part, kw_only=True):
    samples: int
    threads: int
    """distinct threads sampled (py-spy's raw lines name the thread when --threads is on; else 1)"""
    idle_pct: Num
    """samples in frames that wait (sleep, lock, select, a queue's get): the host held nothing"""
    top_self: list[HostFunction]
    """the user-code functions holding the host, by self samples: where the time is spent"""
    top_total: list[HostFunction]
    """by inclusive samples, user code only (outside torch, the standard library, built-ins), without
    the program's own frames (on ≥ 95% of samples: <module>, main, the loop)"""
