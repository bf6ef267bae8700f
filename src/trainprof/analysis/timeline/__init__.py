"""Per-trace analysers over a Context (context.py: one parsed trace with its steps, streams
and links): the GPU time breakdown per step (temporal.py), idle gaps and their causes
(idle.py, callsite.py), host-side work (host_work.py, launch.py, attention_pattern.py),
communication overlap (communication.py), top operators and kernels (ops.py), on interval
helpers (intervals.py); each a pure function of a Context. Within analysis/ it imports only
its own files (graph/, cost/ and job/ build on it); below it, trace/, hardware/,
recordtypes/ and the foundations (tests/unit/test_layering.py checks both).
"""
