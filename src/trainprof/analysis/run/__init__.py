"""Metrics of a live run, from what the trainer and the samplers measured (no trace):
throughput, MFU and HFU (throughput.py), the step-time split by phase (step_split.py),
energy and power (energy.py, system.py), the effective training time ratio from a run's
journal (ettr.py), analytic training memory and the CUDA allocator's snapshot (memory.py,
memory_snapshot.py). Within analysis/ it imports only its own files; below it, hardware/,
recordtypes/, the run records and the foundations.
"""
