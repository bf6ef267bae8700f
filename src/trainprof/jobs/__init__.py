"""Orchestration: jobs that chain the stages (train, analyse, diagnose, tune, report) and
write their records. Commands in `cli/` parse flags and print; the work happens here."""
