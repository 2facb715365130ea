"""The debugger widget's rows and memory as the time-travel tests read them."""

from __future__ import annotations

from flowlab.debug.live_state import ActorRow


def scratch(dbg) -> list[ActorRow]:
    """Every row built anew from the runtime, as LiveState.actors did before it kept rows (the reference)."""
    rows, regsts = [], dbg.runtime.regsts
    for actor in dbg.runtime.actors.values():
        reason = actor.blocked_reason()
        state = actor.state if actor.state != "normal" else ("ready" if reason is None else "blocked")
        occupancy = {rid: (len(regsts[rid]) - len(q), len(regsts[rid])) for rid, q in actor.writable.items()}
        rows.append(ActorRow(f"{dbg.plan.job_names[actor.task.job_id]}/{actor.name}", actor.task.task_type,
                             dbg.plan.job_names[actor.task.job_id], state, actor.act_id, reason, occupancy))
    return rows


def widget_memory(dbg, limit: int) -> dict:
    memory = dbg.memory().to_dict()  # a copy of every lifetime, made now
    return {**memory, "lifetimes": memory["lifetimes"][-limit:], "lifetimes_total": len(memory["lifetimes"])}


def widget_rows(dbg) -> list[dict]:
    return [{"id": f"t:{a.actor_id}", "name": r.name, "job": r.job, "state": r.state, "why_blocked": r.reason,
             "acts": r.acts, "type": r.task_type,
             "registers": " ".join(f"r{rid} {u}/{n}" for rid, (u, n) in r.occupancy.items())}
            for a, r in zip(dbg.runtime.actors.values(), scratch(dbg))]
