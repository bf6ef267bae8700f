"""Diagnosis: small pure rules over the analysis (and run) records → ranked findings."""

from trainprof.diagnose.engine import diagnose_job, diagnose_rank
from trainprof.diagnose.finding import Finding, Thresholds

__all__ = ["Finding", "Thresholds", "diagnose_rank", "diagnose_job"]
