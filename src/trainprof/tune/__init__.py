"""The optimisation ladder: try the known fixes one at a time, keep what is faster and still learns."""

from trainprof.tune.catalogue import KNOBS, Knob
from trainprof.tune.guard import Guard
from trainprof.tune.ladder import LadderResult, TrialResult, run_ladder
from trainprof.tune.ladder_config import LadderConfig

__all__ = ["KNOBS", "Knob", "Guard", "LadderConfig", "LadderResult", "TrialResult", "run_ladder"]
