"""Orchestration: jobs that chain the stages and write their records; commands in `cli/`
parse flags and print. Where the traces of a job are (sources.py) and how their per-rank
analyses are run (engines.py: a local process pool or Ray tasks); the profiling assignment
end to end (study.py)."""
