"""The Monitor's knobs are declared once (issue #44 item 4): `run` and `profile` compose the
same `options.MonitorOptions` (and `Ranks`, `StepRows`), so a flag typed on either command
lands in the same field, and run's trace is built from it (collect/profiler.ProfileConfig.of)."""

import dataclasses

import pytest

from trainprof.cli import build_parser
from trainprof.collect.profiler import ProfileConfig
from trainprof.errors import UsageError
from trainprof.flags import build, leaves
from trainprof.jobs.profile_config import ProfileJob
from trainprof.jobs.run_config import RunJob
from trainprof.options import MonitorOptions, Ranks, StepRows

SHARED = (MonitorOptions, Ranks, StepRows)
FLAGS = ["--profile-steps", "3", "--with-stack", "--modules", "^Block$", "--system-interval", "0.25",
         "--nproc", "2", "--rows", "5"]


def _job(command: str, *argv: str):
    root = {"run": RunJob, "profile": ProfileJob}[command]
    tail = ["--", "python", "x.py"] if command == "profile" else []
    return build(root, build_parser().parse_args([command, *argv, *tail]))


@pytest.mark.parametrize("root", [RunJob, ProfileJob])
def test_each_shared_knob_is_a_field_of_the_shared_classes_only(root):
    names = {f.name for cls in SHARED for f in dataclasses.fields(cls)}
    owners = {leaf.name: leaf.owner for leaf in leaves(root) if leaf.name in names}
    # every shared field is a flag of both commands, declared by the shared class and nowhere else
    assert owners == {f.name: cls for cls in SHARED for f in dataclasses.fields(cls)}


def test_the_same_flags_on_run_and_profile_give_the_same_options():
    run, prof = _job("run", "--profile", *FLAGS), _job("profile", *FLAGS)
    want = MonitorOptions(profile_steps=3, with_stack=True, modules="^Block$", system_interval=0.25)
    assert run.run.monitor == prof.profile.monitor == want
    assert run.run.ranks == prof.ranks == Ranks(2) and run.table == prof.table == StepRows(5)
    # run's trace is the options' (py-spy off): the agent builds its own with the same call
    assert run.run.profile_config == ProfileConfig(active=3, with_stack=True, modules="^Block$")
    nsys = _job("run", "--nsys-capture", "--profile-steps", "3", "--with-stack").run.profile_config
    assert nsys == ProfileConfig(active=3, tool="nsys")  # Nsight Systems only brackets the steps
    assert _job("run").run.profile_config is None and _job("run").run.monitor == MonitorOptions()


def test_each_command_keeps_its_own_fewest_profiled_steps():
    # run: --profile turns the trace on, so 0 steps is refused; profile: 0 means no trace
    with pytest.raises(UsageError, match=r"^run\.profile_steps \(--profile-steps\) must be ≥ 1, got 0$"):
        _job("run", "--profile-steps", "0")
    assert _job("profile", "--profile-steps", "0").profile.monitor.profile_steps == 0
    with pytest.raises(UsageError, match=r"^profile\.system_interval \(--system-interval\) must be from 0"):
        _job("profile", "--system-interval", "-1")
    with pytest.raises(UsageError, match=r"^run\.nproc \(--nproc\) must be ≥ 1, got 0$"):
        _job("run", "--nproc", "0")
    with pytest.raises(UsageError, match=r"^nproc \(--nproc\) must be ≥ 1, got 0$"):  # profile: a root field
        _job("profile", "--nproc", "0")
