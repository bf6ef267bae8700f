"""Orchestration: every flow of more than one stage (read, analyse, diagnose, tune, write)
lives here; a command in `cli/` parses its flags, calls one job and prints what it returns
(tests/unit/test_layering.py: cli/ imports nothing from analysis/, trace/ or diagnose/).
`analyze.py` (traces → per-rank analyses → the job-level reduce; where a job's traces are:
sources.py; how the per-rank analyses run: engines.py, a local process pool or Ray tasks),
`analyze_job.py` (`trainprof analyze`: that, plus ncu, Perfetto and the --out folder),
`run.py` (train → analyse → diagnose → the run folder; torchrun relaunch), `profile.py`
(the user's own program, measured from inside), `diff.py` (two traces compared; the study's
diff stage too), `whatif.py`, `ncu.py`, `ettr.py`, `tune.py`, `study.py` (the profiling
assignment end to end), the memory study and its probes, the torchrun supervisor."""
