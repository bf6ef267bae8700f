"""inject/agent_view.py's Protocol lists only what agent.Agent has (read from the source: an
Agent's __init__ patches nothing, but building one needs an AgentConfig)."""

import ast
import inspect

from trainprof.inject import agent, agent_view


def test_every_member_of_the_view_is_the_agents():
    tree = ast.parse(inspect.getsource(agent.Agent))
    assigned = {
        t.attr
        for n in ast.walk(tree)
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
        for t in (target.elts if isinstance(target, ast.Tuple) else [target])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    view = ast.parse(inspect.getsource(agent_view.AgentView)).body[0]
    fields = {n.target.id for n in view.body if isinstance(n, ast.AnnAssign)}
    methods = {n.name for n in view.body if isinstance(n, ast.FunctionDef)}
    assert {"cfg", "opts", "win", "knobs"} <= fields and "fail" in methods  # the walk found the Protocol
    assert fields - assigned == set()
    assert {m for m in methods if not callable(getattr(agent.Agent, m, None))} == set()
