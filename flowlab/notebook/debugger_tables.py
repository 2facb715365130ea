"""The two big parts of the debugger widget's state, kept from one publish to the next: the actors table and the memory
record. A step of the 30-layer MLP train job moves a few of its 754 actors and a few register lifetimes; building
all of them again for every step took most of the kernel's time per step (benchmarks/_live_debugger.py
``publish_rows``). Here a row's dict is made again only when its actor's row changed (``LiveState.actor_rows`` keeps
the rows), and a lifetime's dict only when the lifetime grew; ``full`` builds everything anew (a restart, a resync
of the widget). Either way the state is the same (tests/debug/test_debugger_rows.py).
"""

from __future__ import annotations

from typing import Any

from ..debug import Debugger
from ..debug.live_state import ActorRow


class StateTables:
    def __init__(self) -> None:
        self._rows: dict[int, tuple[ActorRow, dict[str, Any]]] = {}  # actor id -> (its row, the dict made of it)
        self._recorder: Any = None  # the recorder the lifetimes below are of (a restart makes a new one)
        self._blocks: list[dict[str, Any]] = []
        self._lifetimes: list[tuple[int, dict[str, Any]]] = []  # absolute index -> (last act, the dict made of it)

    def actors(self, dbg: Debugger, nxt: Any, limit: int, full: bool = False) -> dict[str, Any]:
        """``actors`` (up to ``limit`` rows, the next actor ``nxt`` always among them) and ``actors_total``."""
        made = {} if full else self._rows
        rows = []
        for actor, row in zip(dbg.runtime.actors.values(), dbg.actor_rows(full)):
            old = made.get(actor.actor_id)
            if old is None or old[0] is not row:
                old = made[actor.actor_id] = (row, _row_dict(actor.actor_id, row))
            rows.append(old[1])
        self._rows = made
        shown = rows[:limit]
        if nxt is not None and len(rows) > limit and all(r["id"] != f"t:{nxt.actor_id}" for r in shown):
            shown[-1] = next(r for r in rows if r["id"] == f"t:{nxt.actor_id}")
        return {"actors": shown, "actors_total": len(rows)}

    def memory(self, dbg: Debugger, limit: int, full: bool = False) -> dict[str, Any]:
        """``dbg.memory().to_dict()`` with its most recent ``limit`` lifetimes and ``lifetimes_total``. A recorder
        only appends lifetimes and moves an open one's ``last_act``: nothing else of a lifetime changes."""
        recorder = dbg.recorder
        if full or recorder is not self._recorder:
            self._recorder, self._lifetimes = recorder, []
            self._blocks = recorder.blocks()
        made, lifetimes = self._lifetimes, recorder.lifetimes
        total = len(lifetimes)
        out = []
        for i in range(max(0, total - limit), total):
            lt = lifetimes[i]
            if i >= len(made):
                made.extend([(-1, {})] * (i + 1 - len(made)))
            if made[i][0] != lt.last_act:  # new here (-1), or the lifetime grew
                made[i] = (lt.last_act, lt.to_dict())
            out.append(made[i][1])
        return {"blocks": [dict(b) for b in self._blocks], "lifetimes": out, "lifetimes_total": total}


def _row_dict(actor_id: int, row: ActorRow) -> dict[str, Any]:
    return {"id": f"t:{actor_id}", "name": row.name, "job": row.job, "state": row.state, "why_blocked": row.reason,
            "acts": row.acts, "type": row.task_type,
            "registers": " ".join(f"r{rid} {used}/{num}" for rid, (used, num) in row.occupancy.items())}
