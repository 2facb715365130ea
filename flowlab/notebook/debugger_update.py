"""What the debugger widget's comm carries per step: the change of its state, not the whole state.

A 30-layer MLP train job's debugger state is ~200 KiB (754 actor rows, ~270 register lifetimes), and one act changes
a handful of rows. ``StateStream.update`` turns each new full state into the message the front end needs:

- a *full* update (``base`` is None): the state itself (``actors``, ``memory`` with ``blocks``), sent first, after a
  restart, and when the front end asks (a ``{"type": "resync"}`` message: a new view, or one that missed a message);
- a *delta* (``base`` is the ``seq`` of the update it applies on): the small fields as they are, the actor rows that
  changed or appeared (``actors_changed``), the ids of rows no longer shown (``actors_gone``), and the register
  lifetimes that changed or appeared (``memory_changed``: ``first``, the absolute index of the first lifetime kept,
  ``total``, and ``lifetimes`` as ``[absolute index, lifetime]`` pairs). Block descriptions never change in a run.

The whole widget state (``get_state()``: the comm_open, a reloaded page's request_state, a saved notebook) carries
``whole``, the last update's state in full at the same ``seq``. The front end (extension/src/debugstate.ts) keeps the
last state and its ``seq``; a delta whose ``base`` is not its ``seq`` is not applied and asks for a resync, so a lost
message costs one full update, never a wrong table.
"""

from __future__ import annotations

from typing import Any

TABLES = ("actors", "memory")


class StateStream:
    """The updates of one widget's state, each numbered; remembers what the front end was sent last."""

    def __init__(self) -> None:
        self.seq = 0
        self._actors: dict[str, dict[str, Any]] | None = None  # id -> row, as last sent
        self._lifetimes: list[dict[str, Any]] = []  # the window of lifetimes last sent
        self._first = 0  # absolute index of self._lifetimes[0]

    def update(self, state: dict[str, Any], full: bool = False) -> dict[str, Any]:
        """The message for ``state``: full when asked or when nothing was sent yet, else the change since the last."""
        memory = state["memory"]
        lifetimes = memory["lifetimes"]
        first = memory["lifetimes_total"] - len(lifetimes)
        delta = None if full or self._actors is None else self._delta(state, lifetimes, first)
        self.seq += 1
        self._actors = {row["id"]: row for row in state["actors"]}
        self._lifetimes, self._first = list(lifetimes), first
        if delta is None:
            return {"seq": self.seq, "base": None, **state}
        return {"seq": self.seq, "base": self.seq - 1, **delta}

    def whole(self, state: dict[str, Any]) -> dict[str, Any]:
        """The whole of the last update's state as a full update of the same ``seq`` (nothing is sent or advanced):
        what a comm_open, a front end's request_state and a saved notebook's widget state carry."""
        return {"seq": self.seq, "base": None, **state}

    def _delta(self, state: dict[str, Any], lifetimes: list[dict[str, Any]], first: int) -> dict[str, Any]:
        sent = self._actors or {}
        shown = {row["id"] for row in state["actors"]}
        # (a row or lifetime the widget kept is the very dict sent last time: no need to compare its fields)
        changed = [row for row in state["actors"] if sent.get(row["id"]) is not row and sent.get(row["id"]) != row]
        gone = [rid for rid in sent if rid not in shown]
        old, old_first = self._lifetimes, self._first
        moved = []
        for k, lifetime in enumerate(lifetimes):
            i = first + k
            j = i - old_first
            if not 0 <= j < len(old) or (old[j] is not lifetime and old[j] != lifetime):
                moved.append([i, lifetime])
        small = {k: v for k, v in state.items() if k not in TABLES}
        return {**small, "actors_changed": changed, "actors_gone": gone,
                "memory_changed": {"first": first, "total": first + len(lifetimes), "lifetimes": moved}}


def apply_update(state: dict[str, Any] | None, seq: int | None, update: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The front end's rule in Python (extension/src/debugstate.ts is the one that runs): ``(state, seq)`` after
    ``update``; raises ValueError for a delta on another base (the front end asks for a resync instead)."""
    if update["base"] is None:
        return {k: v for k, v in update.items() if k not in ("seq", "base")}, update["seq"]
    if state is None or update["base"] != seq:
        raise ValueError(f"update {update['seq']} applies on {update['base']}, the state is at {seq}")
    rows = {row["id"]: row for row in state["actors"]}
    for rid in update["actors_gone"]:
        rows.pop(rid, None)
    for row in update["actors_changed"]:
        rows[row["id"]] = row
    mem, change = state["memory"], update["memory_changed"]
    old_first = mem["lifetimes_total"] - len(mem["lifetimes"])
    by_index = {old_first + k: lt for k, lt in enumerate(mem["lifetimes"])}
    by_index.update({i: lt for i, lt in change["lifetimes"]})
    lifetimes = [by_index[i] for i in range(change["first"], change["total"])]
    small = {k: v for k, v in update.items() if k not in ("seq", "base", "actors_changed", "actors_gone",
                                                          "memory_changed")}
    memory = {**mem, "lifetimes": lifetimes, "lifetimes_total": change["total"]}
    return {**small, "actors": list(rows.values()), "memory": memory}, update["seq"]
