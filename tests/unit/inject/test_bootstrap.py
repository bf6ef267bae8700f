"""The bootstrap folder: Python imports its sitecustomize, which hands over to the program's
own sitecustomize and leaves sys.path as it was. No torch here: the agent waits for it."""

from __future__ import annotations

import os
import subprocess
import sys

from trainprof.inject import ENV, bootstrap_dir, package_dir
from trainprof.inject.options import AgentConfig, ProfileOptions

PROBE = ("import sys, json; print(json.dumps({'path': sys.path, 'torch': 'torch' in sys.modules, "
         "'theirs': getattr(sys.modules.get('sitecustomize'), 'THEIRS', None)}))")


def _probe(tmp_path, env_extra: dict) -> dict:
    import json

    env = {k: v for k, v in os.environ.items() if k not in (ENV, "PYTHONPATH")}
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return {**json.loads(r.stdout), "stderr": r.stderr}


def test_chains_to_the_programs_own_sitecustomize(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import sys\nTHEIRS = 'ran'\nprint('their sitecustomize', file=sys.stderr)\n")
    cfg = AgentConfig(ProfileOptions(), str(tmp_path / ".parts"), str(package_dir()))
    got = _probe(tmp_path, {"PYTHONPATH": os.pathsep.join([str(bootstrap_dir()), str(theirs)]), ENV: cfg.to_env()})
    assert got["theirs"] == "ran" and got["stderr"] == "their sitecustomize\n"
    assert str(bootstrap_dir()) not in got["path"] and str(theirs) in got["path"]
    assert got["torch"] is False  # armed, not loaded: the program never imported torch


def test_without_another_sitecustomize_or_without_options(tmp_path):
    got = _probe(tmp_path, {"PYTHONPATH": str(bootstrap_dir())})
    assert got["stderr"] == "" and got["theirs"] is None and str(bootstrap_dir()) not in got["path"]
