"""Effective training time ratio from a run journal (pure: a list of events in, numbers out).

    ETTR = productive step time / wall time from the first start to the last event

(Llama 3: > 90% on 16k H100s, Dubey et al. 2024 §3.3.4; Gemini: 97% goodput, Gemini Team
2023 §3). Productive = the steps whose
results survived: a step computed after the last checkpoint of a session that then died is
redone after the restart, and its first computation is lost time. Lost time is split into
start-up (session start → its first step), checkpoint saves and loads, evaluation, redone
steps, downtime (a dead session's last event → the next start), time between a finished
session and a later continuation, and other (the host's time between steps, logging).
"""

from __future__ import annotations


def ettr(events: list[dict]) -> dict:
    events = sorted(events, key=lambda e: e["t"])
    if not events:
        raise ValueError("empty journal")
    sessions: list[list[dict]] = []
    for e in events:
        if e["event"] == "start" or not sessions:
            sessions.append([])
        sessions[-1].append(e)
    total = events[-1]["t"] - events[0]["t"]
    productive = startup = ckpt = evals = redone = downtime = between = 0.0
    # The last computation of each step index is the one that counts; earlier ones were redone.
    last_of_step: dict[int, tuple[int, int]] = {}
    for si, sess in enumerate(sessions):
        for ei, e in enumerate(sess):
            if e["event"] == "step":
                last_of_step[int(e["step"])] = (si, ei)
    crashed = 0
    for si, sess in enumerate(sessions):
        startup += _startup(sess)
        for ei, e in enumerate(sess):
            if e["event"] == "step":
                if last_of_step[int(e["step"])] == (si, ei):
                    productive += e.get("step_time_s", 0.0)
                else:
                    redone += e.get("step_time_s", 0.0)
            elif e["event"] in ("checkpoint_save", "checkpoint_load"):
                ckpt += e.get("duration_s", 0.0)
            elif e["event"] == "eval":
                evals += e.get("duration_s", 0.0)
        ended = any(e["event"] == "end" for e in sess)
        if si + 1 < len(sessions):
            gap = sessions[si + 1][0]["t"] - sess[-1]["t"]
            if ended:
                between += gap  # a finished run continued later: not a failure
            else:
                crashed += 1
                downtime += gap
    other = max(0.0, total - productive - startup - ckpt - evals - redone - downtime - between)
    lost = {"startup": startup, "checkpointing": ckpt, "evaluation": evals, "redone_steps": redone,
            "failures_downtime": downtime, "between_sessions": between, "other": other}
    return {
        "ettr": productive / total if total > 0 else None,
        "wall_s": total, "productive_s": productive,
        "lost_s": lost,
        # each cause's share of the wall time, for the reports (they show it, never compute it)
        "lost_pct": {k: 100.0 * v / total for k, v in lost.items()} if total > 0 else {},
        "sessions": len(sessions), "failures": crashed,
        "steps_completed": len(last_of_step),
        "finished": any(e["event"] == "end" for e in sessions[-1]),
    }


def _startup(sess: list[dict]) -> float:
    """A session's start to its first step (0 when it has none)."""
    first_step = next((e for e in sess if e["event"] == "step"), None)
    if first_step is None:
        return 0.0
    begun = first_step["t"] - first_step.get("step_time_s", 0.0)
    loads = sum(e.get("duration_s", 0.0) for e in sess if e["event"] == "checkpoint_load" and e["t"] <= begun)
    return max(0.0, begun - sess[0]["t"] - loads)  # the checkpoint load is counted as checkpointing
