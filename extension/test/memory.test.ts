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

// What a person reads (issue 24): rows named by blob, blocks sorted by size or peak, the total live bytes over the acts,
// a long block folded until asked.
const hand: Memory = {
  blocks: [{ id: "b:0", size: 1000, mem_case: "host" }, { id: "b:1", size: 4000, mem_case: "host" }, { id: "b:2", size: 2000, mem_case: "host" }],
  lifetimes: [
    { regst: "r:68", block: "b:0", offset: 0, size: 900, first_act: 0, last_act: 3, lbns: ["fc1/out"] },
    { regst: "r:69", block: "b:1", offset: 0, size: 100, first_act: 1, last_act: 1, lbns: ["a_very_long_scope/with/many/levels/dense_7-matmul/out", "x/y"] },
    { regst: "r:70", block: "b:2", offset: 0, size: 500, first_act: 2, last_act: 2 },
  ],
};

function blockOrder(v: InstanceType<typeof MemoryView>): string[] {
  return [...v.root.querySelectorAll("g.fl-mem-block")]
    .map((g) => [Number(/translate\(0,([\d.]+)\)/.exec(g.getAttribute("transform")!)![1]), g.querySelector("text")!.textContent!.split(" ")[0]] as const)
    .sort((p, q) => p[0] - q[0]).map((p) => p[1]);
}

test("rows are named by their blob, cut at the front, the register id only without lbns", () => {
  const v = new MemoryView();
  v.set(hand, 4);
  const labels = [...v.root.querySelectorAll(".fl-mem-labels text")].map((t) => t.textContent);
  assert.deepEqual(labels[0], "fc1/out");
  assert.ok(labels[1]!.startsWith("…") && labels[1]!.endsWith("dense_7-matmul/out +1") && labels[1]!.length <= 34, labels[1]!);
  assert.equal(labels[2], "r:70 @0");
  assert.ok(!labels.some((l) => /^r:6[89]/.test(l!)));
  assert.match(v.root.querySelector("rect.bar title")!.textContent!, /fc1\/out \(r:68\)/);
});

test("blocks sort by id, size (largest first) or peak live bytes; the total line says live and peak bytes", () => {
  const v = new MemoryView();
  v.set(hand, 4);
  v.at(1);
  assert.deepEqual(blockOrder(v), ["b:0", "b:1", "b:2"]);
  v.sortBlocks("size");
  assert.deepEqual(blockOrder(v), ["b:1", "b:2", "b:0"]);
  v.sortBlocks("peak");
  assert.deepEqual(blockOrder(v), ["b:0", "b:2", "b:1"]);  // peaks 900, 500, 100
  // total: act 0: 900, act 1: 1000, act 2: 1400, act 3: 900
  assert.equal(v.root.querySelector(".fl-mem-total text")!.textContent, "total live: 1000 B at act 1, peak 1.4 KiB at act 2");
  const d = v.root.querySelector("path.total")!.getAttribute("d")!;
  const ys = [...d.matchAll(/[ML][\d.]+,([\d.]+)/g)].map((m) => Number(m[1]));
  assert.equal(ys.length, 4);
  assert.ok(ys[2] < ys[1] && ys[1] < ys[0] && ys[0] === ys[3], ys.join(" "));  // higher bytes are higher up
  const peaked = new MemoryView();  // a fresh view sorted the same draws the same chart
  peaked.sortBlocks("peak");
  peaked.set(hand, 4);
  peaked.at(1);
  assert.equal(peaked.root.querySelector(".fl-mem")!.innerHTML, v.root.querySelector(".fl-mem")!.innerHTML);
});

test("a block with many registers shows 40 rows until its more line is clicked, and folds back", () => {
  const many: Memory = { blocks: [{ id: "b:0", size: 1 << 20, mem_case: "host" }],
    lifetimes: Array.from({ length: 100 }, (_, i) => ({ regst: `r:${i}`, block: "b:0", offset: i * 64, size: 64, first_act: i, last_act: i, lbns: [`op_${i}/out`] })) };
  const v = new MemoryView();
  v.set(many, 100);
  assert.equal(v.root.querySelectorAll("rect.bar").length, 40);
  const more = v.root.querySelector(".fl-mem-more")!;
  assert.equal(more.textContent, "… and 60 more registers (click to show)");
  more.dispatchEvent(new (globalThis as unknown as { window: { Event: typeof Event } }).window.Event("click"));
  assert.equal(v.root.querySelectorAll("rect.bar").length, 100);
  assert.equal(v.root.querySelector(".fl-mem-more")!.textContent, "show fewer registers");
  v.root.querySelector(".fl-mem-more")!.dispatchEvent(new (globalThis as unknown as { window: { Event: typeof Event } }).window.Event("click"));
  assert.equal(v.root.querySelectorAll("rect.bar").length, 40);
});
