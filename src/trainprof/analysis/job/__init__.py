"""Across ranks and across traces: a job's collectives matched rank to rank with the clock
offsets, waits and culprits they give (collectives_align.py, collectives_waits.py,
collectives_job.py, collectives_table.py, collectives_ops.py; each rank's block comes from
collectives.py, run inside its trace's analysis so only the block travels), host step
lateness (lateness.py), the compute-based straggler guess (multirank.py), bus bandwidth
factors (busbw.py), and two traces compared (diff.py). All but collectives.py read per-rank
records, not traces. Within analysis/ it may import timeline/ (the Context of collectives.py,
the idle causes of diff.py), never graph/, cost/ or run/; below it, trace/, hardware/,
recordtypes/ and the foundations.
"""
