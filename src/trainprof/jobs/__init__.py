"""Orchestration: jobs that chain the stages (train, analyse, diagnose, tune, report) and
write their records: `run.py` (train → analyse → diagnose → the run folder), the memory
study and its probes, the torchrun supervisor, and where a job's traces are (sources.py)
and how their per-rank analyses run (engines.py: a local process pool or Ray tasks).
Commands in `cli/` parse flags and print; the work happens here."""
