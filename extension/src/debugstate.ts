// The debugger's state as the front end keeps it: DebuggerWidget sends `update`, the change since its last update
// (flowlab/notebook/debugger_update.py), so a step of a 754-actor job carries a few rows, not the whole table. A full
// update (base null) replaces the state; a delta applies only on the update it was made against (its base is our
// seq). Anything else (a new view of a live widget, a missed message) is refused and the widget is asked for the
// whole state again: a lost message costs one full update, never a stale table.
import type { Actor, DebugState } from "./debugger.js";
import type { Lifetime, Memory } from "./payload.js";

export interface MemoryChange { first: number; total: number; lifetimes: [number, Lifetime][] }
export type DebugUpdate = DebugState & {
  seq: number; base: number | null;
  actors_changed?: Actor[]; actors_gone?: string[]; memory_changed?: MemoryChange;
};
type StateMemory = Memory & { lifetimes_total?: number };

const DELTA_KEYS = new Set(["seq", "base", "actors_changed", "actors_gone", "memory_changed"]);

export class StateStore {
  state: DebugState = {};
  seq: number | null = null;
  private asked: number | null = null;  // the seq we were at when we asked for a resync (ask once per gap)

  /** Apply an update; false when it cannot apply here (the caller asks for a resync, see `shouldResync`). */
  apply(u: DebugUpdate | null | undefined): boolean {
    if (!u || typeof u.seq !== "number") return false;
    if (u.seq === this.seq) return true;  // the same update again (a second listener, a redraw)
    if (u.base === null || u.base === undefined) {
      const { seq: _s, base: _b, ...state } = u;
      this.state = state;
    } else if (this.seq !== null && u.base === this.seq) {
      try {
        this.state = applyDelta(this.state, u);
      } catch {
        return false;  // a delta that does not fit what we hold: the whole state fixes it
      }
    } else return false;
    this.seq = u.seq;
    this.asked = null;
    return true;
  }

  /** Whether to ask the kernel for the whole state now: once per refused stretch, not on every refused delta. */
  shouldResync(): boolean {
    const key = this.seq ?? -1;
    if (this.asked === key) return false;
    this.asked = key;
    return true;
  }
}

/** The state after a delta: small fields replaced, actor rows replaced or appended by id, gone rows dropped, register
 * lifetimes set at their absolute index inside the new window [first, total). */
export function applyDelta(state: DebugState, u: DebugUpdate): DebugState {
  const next: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(u)) if (!DELTA_KEYS.has(k)) next[k] = v;
  const rows = new Map((state.actors ?? []).map((a) => [a.id, a] as [string, Actor]));
  for (const id of u.actors_gone ?? []) rows.delete(id);
  for (const a of u.actors_changed ?? []) rows.set(a.id, a);
  next.actors = [...rows.values()];
  const mem = (state.memory ?? { blocks: [], lifetimes: [] }) as StateMemory;
  const ch = u.memory_changed;
  if (ch) {
    const oldFirst = (mem.lifetimes_total ?? mem.lifetimes.length) - mem.lifetimes.length;
    const lifetimes: (Lifetime | undefined)[] = [];
    for (let i = ch.first; i < ch.total; i++) lifetimes.push(mem.lifetimes[i - oldFirst]);
    for (const [i, lt] of ch.lifetimes) lifetimes[i - ch.first] = lt;
    if (lifetimes.some((lt) => lt === undefined)) throw new Error(`memory delta leaves lifetimes unknown in [${ch.first}, ${ch.total})`);
    next.memory = { ...mem, lifetimes: lifetimes as Lifetime[], lifetimes_total: ch.total };
  } else next.memory = mem;
  return next as DebugState;
}
