"""Ending a torch.distributed process group without aborting the process at exit.

gloo's worker thread frees a finished collective's tensors after waking the caller, and
freeing a tensor made in Python needs the GIL; a rank that exits right after its last
collective can reach interpreter shutdown first, and the worker then aborts the process
("terminate called without an active exception", SIGABRT; mechanism: pytorch/pytorch#179291).
Measured on this 2-core machine with both ranks of tests/data/scripts/busbw_paired.py pinned to
one core (`taskset -c 0`): 3 of 20 runs aborted with a barrier before destroy_process_group,
0 of 30 with the sleep below, 0 of 30 ending with os._exit (for scripts that own the process).
Two-rank `trainprof run --bind-numa` runs: 13 of 30 with a barrier, 0 of 30 with the sleep.
"""

from __future__ import annotations

import time

# A tenth of a second hands gloo's worker the GIL and a core; paid once per job.
_GLOO_DRAIN_S = 0.1


def end_process_group() -> None:
    """destroy_process_group(), after letting gloo's workers drop their tensors; no-op if none."""
    import torch.distributed as dist

    if not dist.is_initialized():
        return
    if dist.get_backend() == "gloo":
        time.sleep(_GLOO_DRAIN_S)
    dist.destroy_process_group()
