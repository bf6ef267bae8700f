"""`trainprof profile`'s agent: trainprof inside the user's own Python process.

How it gets there (docs/profile.md): `trainprof profile` (jobs/profile.py) puts `bootstrap/`
first on the program's PYTHONPATH and its options in the environment (options.py). Python
imports `bootstrap/sitecustomize.py` at start-up; it hands over to any other sitecustomize
and arms `startup.py`, which waits for the program's own `import torch` and then installs
the agent's hooks (agent.py). The program runs in its own process, with its own argv, stdout,
stderr, signals and exit code. Nothing in this file imports torch.
"""

from __future__ import annotations

from pathlib import Path

ENV = "TRAINPROF_PROFILE"
"""The agent's configuration, as JSON (options.AgentConfig); removed from the environment of
the process that claims a rank, so the processes it starts are not profiled."""
PARTS = ".parts"
"""The folder, inside the run's staging folder, where each profiled rank leaves its records."""


def bootstrap_dir() -> Path:
    """The folder `trainprof profile` puts first on PYTHONPATH (it holds only sitecustomize.py)."""
    return Path(__file__).resolve().parent / "bootstrap"


def package_dir() -> Path:
    """This trainprof package, which the bootstrap loads into the program (the same version
    as the parent, whatever the program's environment holds)."""
    return Path(__file__).resolve().parents[1]
