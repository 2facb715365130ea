// The debugger's state kept from DebuggerWidget's updates (src/debugstate.ts): applied in order, the deltas the kernel
// sent give, after every command, the whole state the kernel holds; a missed update or a new view asks for the whole
// state once and takes it. The fixture is the pad job's widget driven through a restart with a 6-row table
// (tests/notebook/test_debugger_update.py writes it).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { StateStore } from "../src/debugstate.js";
import type { DebugUpdate } from "../src/debugstate.js";
import type { DebugState } from "../src/debugger.js";

interface Step { command?: string; update: DebugUpdate; state: DebugState }
const FIXTURE = JSON.parse(readFileSync(join(process.cwd(), "..", "tests", "e2e", "fixtures", "debugger_updates.json"), "utf8")) as { steps: Step[] };

/** The same state: every field, the actor rows by id (a row that comes into view is appended; the table sorts). */
function same(got: DebugState, want: DebugState, at: string): void {
  const byId = (s: DebugState) => new Map((s.actors ?? []).map((a) => [a.id, a]));
  assert.deepEqual(byId(got), byId(want), `${at}: actor rows`);
  assert.equal(got.actors?.length, want.actors?.length, `${at}: number of rows`);
  const rest = (s: DebugState) => { const { actors: _a, ...r } = s; return r; };
  assert.deepEqual(rest(got), rest(want), `${at}: the other fields`);
}

test("the fixture has deltas, rows leaving the table, lifetimes and a restart", () => {
  const ups = FIXTURE.steps.map((s) => s.update);
  assert.ok(ups.filter((u) => u.base !== null).length >= 7);
  assert.ok(ups.some((u) => (u.actors_gone ?? []).length > 0));
  assert.ok(ups.some((u) => (u.memory_changed?.lifetimes ?? []).length > 0));
  assert.ok(ups.some((u) => (u.memory_changed?.first ?? 0) > 0), "the lifetimes' window slides");
  assert.equal(FIXTURE.steps.find((s) => s.command === "restart")?.update.base, null);
});

test("the updates applied in order give the kernel's whole state after every command", () => {
  const store = new StateStore();
  for (const [k, s] of FIXTURE.steps.entries()) {
    assert.ok(store.apply(s.update), `step ${k} (${s.command ?? "first"}) applies`);
    assert.equal(store.seq, s.update.seq);
    same(store.state, s.state, `step ${k} (${s.command ?? "first"})`);
  }
});

test("a missed update is refused, asked for once, and the whole state puts it right", () => {
  const steps = FIXTURE.steps;
  const store = new StateStore();
  store.apply(steps[0].update);
  store.apply(steps[1].update);
  const before = store.state;
  assert.equal(store.apply(steps[3].update), false, "a delta on an update we never got");  // steps[2] was lost
  assert.equal(store.state, before, "a refused delta changes nothing");
  assert.equal(store.shouldResync(), true);
  assert.equal(store.apply(steps[4].update), false);
  assert.equal(store.shouldResync(), false, "one resync per gap, not one per refused delta");
  // The kernel answers a resync with the whole state of its last update.
  const full = { ...steps[4].state, seq: steps[4].update.seq + 100, base: null } as DebugUpdate;
  assert.ok(store.apply(full));
  same(store.state, steps[4].state, "after the resync");
  assert.equal(store.apply({ ...steps[5].update, base: full.seq }), true, "deltas go on from the resync");
  same(store.state, steps[5].state, "the delta after the resync");
});

test("a new view of a live widget starts from a delta: it asks for the whole state", () => {
  const store = new StateStore();
  assert.equal(store.apply(FIXTURE.steps[2].update), false);
  assert.deepEqual(store.state, {});
  assert.equal(store.shouldResync(), true);
  assert.ok(store.apply(FIXTURE.steps[0].update), "a full update always applies");
});
