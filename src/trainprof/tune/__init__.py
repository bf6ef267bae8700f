"""The optimisation ladder: try the known fixes one at a time, keep what is faster and still learns."""

from trainprof.tune.catalogue import KNOBS, Knob
from trainprof.tune.guard import Guard
from trainprof.tune.ladder import TrialResult, run_ladder

__all__ = ["KNOBS", "Knob", "Guard", "TrialResult", "run_ladder"]
