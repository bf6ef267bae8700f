"""The optimisation ladder's settings, declared once: `trainprof tune` and a study's tune stage
hold a `TuneConfig` (jobs/tune.TuneJob.tune, jobs/study_config.StudyConfig.tune), and the
ladder's own keyword defaults read it (tune/ladder.py).

Decided defaults (docs/configuration.md, "Defaults unified"): a knob is kept when ≥ 3%
faster (the smallest gain the verify pairs resolve on a shared machine), and 3 verify pairs,
for tune and study alike (a study had 2): the median of three ratios is one measured pair,
which one outlier cannot move, where the "median" of two is their mean; pairs beyond the
first start only when they fit in the time left, so the larger default costs a short budget
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from trainprof.errors import ConfigError
from trainprof.flags import option

if TYPE_CHECKING:
    from trainprof.tune.catalogue import Knob


def parse_knobs(text: str, flag: str) -> tuple[str, ...] | None:
    """`--knobs a, b,,c` → ('a', 'b', 'c'); nothing named → None (the speed ladder)."""
    names = tuple(k.strip() for k in text.split(",") if k.strip())
    return names or None


@dataclass(frozen=True)
class TuneConfig:
    """What the ladder tries and what it keeps."""

    PATH: ClassVar[str] = "tune"

    knobs: tuple[str, ...] | None = option(None, parse=parse_knobs, metavar="a,b", show=",".join)
    """comma-separated subset of the tune catalogue, in order (default: the speed ladder)"""
    min_gain: float = 0.03
    """keep a knob only if ≥ this much faster than the best so far (0.03: 1.03×)"""
    verify_trials: int = 3
    """best-vs-baseline pairs that confirm the result at the end (0: none)"""

    def __post_init__(self) -> None:
        if self.knobs is not None:
            from trainprof.tune.catalogue import KNOBS

            known = [k.name for k in KNOBS]
            unknown = [k for k in self.knobs if k not in known]
            if unknown:
                raise ConfigError("knobs", f"names no knob {', '.join(unknown)}; choose from {', '.join(known)}",
                                  owner=self.PATH)
        if not self.min_gain >= 0:
            raise ConfigError("min_gain", "must be ≥ 0", owner=self.PATH, got=self.min_gain)
        if not isinstance(self.verify_trials, int) or self.verify_trials < 0:
            raise ConfigError("verify_trials", "must be ≥ 0", owner=self.PATH, got=self.verify_trials)

    def ladder(self) -> tuple[Knob, ...]:
        """The knobs tried, in order: those named, else the catalogue's speed knobs (the
        memory-for-speed knobs are tried only when named)."""
        from trainprof.tune.catalogue import KNOBS, by_name

        return by_name(list(self.knobs)) if self.knobs else tuple(k for k in KNOBS if k.speed)
