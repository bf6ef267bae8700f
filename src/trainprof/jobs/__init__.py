"""Orchestration: jobs that chain the stages (train, analyse, diagnose, tune, report) and
write their records; commands in `cli/` parse flags and print, the work happens here.
`run.py` (train → analyse → diagnose → the run folder), `analyze.py` (traces → per-rank
analyses → the job-level reduce), where the traces of a job are (sources.py) and how their
per-rank analyses are run (engines.py: a local process pool or Ray tasks), the profiling
assignment end to end (study.py), the memory study and its probes, the torchrun supervisor."""
