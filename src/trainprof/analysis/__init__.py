"""Pure analysis over records: no clocks, no devices, no torch.cuda (see ARCHITECTURE.md).

In folders by concern: timeline/ (per-trace analysers over a Context), graph/ (the
dependency graph, critical path and what-if), cost/ (FLOPs, bytes, roofline, ncu), job/
(across ranks and traces: collectives, stragglers, diff), run/ (live-run metrics), plan/
(memory and time before a run, by formula).
timeline/ is the floor; graph/, cost/ and job/ build on it and not on each other; run/
stands alone; plan/ uses cost/'s FLOPs. trace_report.py, here, is the one place that composes them into a rank's
analysis record.
"""
