// The memory chart updated in place (src/memory.ts) is the chart a fresh view draws: after every state of the pad job's
// debugger session (the kernel's updates, tests/e2e/fixtures/debugger_updates.json: a sliding window of lifetimes and a
// restart) and after a long synthetic run (lifetimes growing, starting mid-block, leaving the window, the act axis
// shrinking as acts accrue, a block past its row limit); and a step changes only the elements of what moved.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { installDom } from "./dom.js";

installDom();
const { MemoryView } = await import("../src/memory.js");
type Memory = import("../src/payload.js").Memory;
type Lifetime = import("../src/payload.js").Lifetime;

function fresh(memory: Memory, acts: number): string {
  const v = new MemoryView();
  v.set(memory, acts);
  v.at(Math.max(0, acts - 1));
  return v.root.innerHTML;
}

test("after every state of a debugger session the chart equals a fresh one", () => {
  const fixture = JSON.parse(readFileSync(join(process.cwd(), "..", "tests", "e2e", "fixtures", "debugger_updates.json"), "utf8"));
  const view = new MemoryView();
  let drawn = 0;
  for (const [k, step] of fixture.steps.entries()) {
    const st = step.state;
    if (!st.memory) continue;
    view.set(st.memory, st.acts ?? 0);
    view.at(Math.max(0, (st.acts ?? 0) - 1));
    assert.equal(view.root.innerHTML, fresh(st.memory, st.acts ?? 0), `state ${k} (${step.command ?? "first"})`);
    drawn += st.memory.lifetimes.length ? 1 : 0;
  }
  assert.ok(drawn >= 5, `${drawn} states with lifetimes`);
});

/** A run of `acts` acts over 3 blocks: register r<i> is written every few acts, each write a lifetime of a few acts;
 * block b:2 holds more registers than a block shows rows (the "… and N more" line). */
function synthetic(acts: number, window: number, maxRows = 600): Memory {
  const lifetimes: Lifetime[] = [];
  for (let a = 0; a < acts; a++) {
    const r = (a * 7) % 23, block = r < 8 ? "b:0" : r < 15 ? "b:1" : "b:2";
    lifetimes.push({ regst: `r:${r}`, block, offset: (r % 8) * 64 + (block === "b:2" ? (a % maxRows) * 512 : 0), size: 64 + r,
      first_act: a, last_act: Math.min(acts - 1, a + (r % 5)) });
  }
  return { blocks: [{ id: "b:0", size: 4096, mem_case: "host" }, { id: "b:1", size: 4096, mem_case: "host" },
    { id: "b:2", size: 0, mem_case: "host" }], lifetimes: lifetimes.slice(-window) };
}

test("a long run set act by act gives the fresh chart, with the axis shrinking and lifetimes leaving", () => {
  const view = new MemoryView();
  for (let acts = 1; acts <= 160; acts += acts < 40 ? 1 : 9) {
    const m = synthetic(acts, 120);
    view.set(m, acts);
    view.at(acts - 1);
    assert.equal(view.root.innerHTML, fresh(m, acts), `after ${acts} acts`);
  }
  const m = synthetic(1900, 1900);  // b:2 past 600 rows
  view.set(m, 1900);
  view.at(1899);
  assert.match(view.root.innerHTML, /… and \d+ more registers/);
  assert.equal(view.root.innerHTML, fresh(m, 1900));
  view.set({ blocks: [], lifetimes: [] }, 0);
  assert.equal(view.root.querySelector("svg"), null);
  assert.equal(view.root.textContent?.includes("no memory record"), true);
});

test("a step keeps every element of a lifetime that did not move", () => {
  const view = new MemoryView();
  view.set(synthetic(100, 500), 100);
  const before = new Map([...view.root.querySelectorAll("rect.bar")].map((r) => [r.querySelector("title")!.textContent!.split(",")[0] + r.getAttribute("x"), r]));
  const widthBefore = new Map([...before].map(([k, r]) => [k, r.getAttribute("width")]));
  view.set(synthetic(101, 500), 101);  // one act more: one new lifetime, the open ones grow
  const after = [...view.root.querySelectorAll("rect.bar")];
  const kept = after.filter((r) => before.get(r.querySelector("title")!.textContent!.split(",")[0] + r.getAttribute("x")) === r);
  assert.equal(after.length, before.size + 1);
  assert.equal(kept.length, before.size, "every old bar is the same element");
  const grown = kept.filter((r) => widthBefore.get(r.querySelector("title")!.textContent!.split(",")[0] + r.getAttribute("x")) !== r.getAttribute("width"));
  assert.ok(grown.length <= 5, `${grown.length} bars changed width`);  // the act axis is a scale on the group, not each bar
});

test("two lifetimes alike in block, offset, first act and register each get their own bar", () => {
  const lt = { regst: "r:1", block: "b:0", offset: 0, size: 8, first_act: 0, last_act: 1 };
  const m: Memory = { blocks: [{ id: "b:0", size: 64, mem_case: "host" }], lifetimes: [lt, { ...lt, last_act: 2 }] };
  const view = new MemoryView();
  view.set({ ...m, lifetimes: [lt] }, 2);
  view.set(m, 3);
  view.at(2);
  assert.equal(view.root.querySelectorAll("rect.bar").length, 2);
  assert.equal(view.root.innerHTML, fresh(m, 3));
});
