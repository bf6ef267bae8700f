"""Orchestration: where the traces of a job are (sources.py) and how their per-rank
analyses are run (engines.py: a local process pool or Ray tasks)."""
