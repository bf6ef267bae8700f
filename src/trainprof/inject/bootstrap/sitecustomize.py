"""trainprof profile's bootstrap (docs/profile.md).

Python imports this module at start-up because `trainprof profile` put its folder first on
PYTHONPATH. It takes its own folder off sys.path, arms trainprof's agent (which waits for the
program's `import torch`; trainprof.inject.startup), then imports the sitecustomize it
shadows, if there is one, exactly as Python would have. An error of trainprof's own costs one
line on stderr and the profile, never the program.
"""

import os
import sys


def _arm() -> None:
    config = os.environ.get("TRAINPROF_PROFILE")
    if not config:
        return
    try:
        if "trainprof" not in sys.modules:
            _load_trainprof(config)
        from trainprof.inject import startup

        startup.arm(config)
    except Exception as e:  # noqa: BLE001 - never break the user's program
        # trainprof itself may be what failed to load: controls.py's escaping, by hand (C0, DEL, C1 shown)
        text = "".join(c if c.isprintable() or c == " " else f"\\x{ord(c):02x}" if ord(c) < 0x100
                       else f"\\u{ord(c):04x}" for c in str(e))
        sys.stderr.write(f"trainprof: cannot profile this process ({type(e).__name__}: {text})\n")


def _load_trainprof(config: str) -> None:
    """The parent's trainprof package by path (the program's environment may hold another
    version, or none): registered as `trainprof`, its submodules import from there."""
    import importlib.util
    import json

    pkg = json.loads(config)["package_dir"]
    spec = importlib.util.spec_from_file_location("trainprof", os.path.join(pkg, "__init__.py"),
                                                  submodule_search_locations=[pkg])
    module = importlib.util.module_from_spec(spec)
    sys.modules["trainprof"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["trainprof"]
        raise


def _chain() -> None:
    """Import the next sitecustomize on the path, if any, in our place: it ends up as
    sys.modules["sitecustomize"], its errors surface as Python's own site.py reports them."""
    import importlib

    me = sys.modules.pop("sitecustomize", None)  # this module: the import below must find the next one
    try:
        importlib.import_module("sitecustomize")
    except ImportError as e:
        if e.name != "sitecustomize":
            raise
        if me is not None:
            sys.modules["sitecustomize"] = me  # none other: Python's import of us must find us


_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
_arm()
_chain()
