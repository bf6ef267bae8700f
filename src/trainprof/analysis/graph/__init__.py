"""The dependency graph of a trace and its walks: the graph (depgraph.py, with its CPU
threads' builders in cpu_lanes.py, pruning and binding in binding.py, the vocabulary in
edge_kinds.py), what each host
sync waited for (syncs.py), the CPU–GPU clock offset its links reveal (clock.py), runs of
one-in-edge nodes and the optional C loops over them (chains.py, _loops.c), the critical
path (critical_path.py, path_steps.py), the what-if re-timing and its bounds (whatif.py,
whatif_bounds.py) and a finding's projected gain (projection.py). Within analysis/ it may
import timeline/ (the Context the graph is built from), never cost/, job/ or run/; below
it, trace/, hardware/, recordtypes/ and the foundations.
"""
