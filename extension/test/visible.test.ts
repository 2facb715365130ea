import assert from "node:assert/strict";
import { test } from "node:test";
import { bigPlan, mlpJobset } from "../src/fixtures.js";
import { layoutSync } from "../src/layout.js";
import type { Graph } from "../src/payload.js";
import { aggregate, GroupTree, MAX_VISIBLE } from "../src/visible.js";

// Two groups A (a1, a2) and B (b1); edges a1->b1, a2->b1 (data) and a1->a2 (inside A).
const g: Graph = {
  groups: [{ id: "A", label: "A", parent: null, kind: "scope", collapsed: true }, { id: "B", label: "B", parent: null, kind: "scope", collapsed: false }],
  nodes: [{ id: "a1", label: "a1", kind: "op", parent: "A" }, { id: "a2", label: "a2", kind: "op", parent: "A" }, { id: "b1", label: "b1", kind: "op", parent: "B" }],
  edges: [{ id: "e1", source: "a1", target: "b1", kind: "data", label: "f32[2]" }, { id: "e2", source: "a2", target: "b1", kind: "data", label: "f32[3]" },
    { id: "e3", source: "a1", target: "a2", kind: "data", label: "f32[4]" }],
  lanes: [], details: {},
};

test("a collapsed group is one box counting its nodes; edges into it are aggregated, inner edges dropped", () => {
  const t = new GroupTree(g);
  const v = t.visible();
  assert.deepEqual(v.nodes.map((n) => [n.id, n.kind, n.count]), [["A", "group", 2], ["b1", "op", undefined]]);
  assert.deepEqual(v.clusters.map((c) => c.id), ["B"]);
  assert.equal(v.edges.length, 1);
  assert.deepEqual([v.edges[0].source, v.edges[0].target, v.edges[0].count, v.edges[0].label], ["A", "b1", 2, "2 edges"]);
  assert.deepEqual(v.edges[0].members.sort(), ["e1", "e2"]);
});

test("expanding restores every node and edge with its own label; collapsing again aggregates again", () => {
  const t = new GroupTree(g);
  t.toggle("A");
  const v = t.visible();
  assert.deepEqual(v.nodes.map((n) => n.id).sort(), ["a1", "a2", "b1"]);
  assert.deepEqual(v.edges.map((e) => `${e.source}>${e.target}:${e.label}`).sort(), ["a1>a2:f32[4]", "a1>b1:f32[2]", "a2>b1:f32[3]"]);
  t.toggle("A");
  assert.equal(t.visible().edges.length, 1);
  assert.notEqual(t.visible().key, (() => { const u = new GroupTree(g); u.toggle("A"); return u.visible().key; })());
});

test("aggregation keeps edge kinds apart", () => {
  const e = aggregate([{ id: "x", source: "a", target: "b", kind: "data" }, { id: "y", source: "a", target: "b", kind: "ctrl" }], (id) => id);
  assert.equal(e.length, 2);
});

test("reveal opens the ancestors of a hidden node; representative names the box it is drawn in", () => {
  const t = new GroupTree(g);
  assert.equal(t.representative("a2"), "A");
  assert.ok(t.reveal("a2"));
  assert.equal(t.representative("a2"), "a2");
});

test("the 10,000-task plan never shows more than MAX_VISIBLE boxes, even with everything opened", () => {
  const t = new GroupTree(bigPlan().graph);
  assert.ok(t.visibleCount() <= MAX_VISIBLE);
  for (const id of t.groups.keys()) t.collapsed.delete(id);
  assert.equal(t.visibleCount(), 10_000);
  t.bound(MAX_VISIBLE, "g:job:3/layer2");
  assert.ok(t.visibleCount() <= MAX_VISIBLE, `${t.visibleCount()} boxes`);
  assert.ok(t.isVisible("t:3080") || t.representative("t:3080") === "g:job:3/layer2");
  assert.equal(t.representative("g:job:3/layer2"), "g:job:3/layer2");  // the group kept open is still drawn
});

test("layout: every box has finite coordinates inside the bounds, no two boxes overlap, clusters hold their nodes", () => {
  const t = new GroupTree(mlpJobset().graph);
  t.toggle("g:job:1/fc0");
  t.toggle("g:job:1/fc1");
  const v = t.visible();
  assert.ok(v.nodes.length <= MAX_VISIBLE);
  const lay = layoutSync(v);
  const b = lay.bounds, boxes = [...lay.nodes.values()];
  assert.equal(boxes.length, v.nodes.length);
  for (const n of boxes) {
    for (const x of [n.x, n.y, n.w, n.h]) assert.ok(Number.isFinite(x));
    assert.ok(n.x >= b.x - 0.5 && n.y >= b.y - 0.5 && n.x + n.w <= b.x + b.w + 0.5 && n.y + n.h <= b.y + b.h + 0.5, n.node.id);
  }
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const p = boxes[i], q = boxes[j];
    assert.ok(p.x + p.w <= q.x + 0.5 || q.x + q.w <= p.x + 0.5 || p.y + p.h <= q.y + 0.5 || q.y + q.h <= p.y + 0.5, `${p.node.id} overlaps ${q.node.id}`);
  }
  const fc0 = lay.clusters.find((c) => c.id === "g:job:1/fc0")!;
  const m = lay.nodes.get("o:fc0-matmul")!;
  assert.ok(m.x >= fc0.x && m.y >= fc0.y && m.x + m.w <= fc0.x + fc0.w && m.y + m.h <= fc0.y + fc0.h);
  for (const e of lay.edges) assert.ok(e.points.length >= 2, e.edge.id);
});

test("grouping by lane puts each lane's nodes under a copy of their groups; edges and node ids stay", async () => {
  const { groupByLane } = await import("../src/visible.js");
  const p = bigPlan(200, 2, 4);
  const g2 = groupByLane(p.graph);
  assert.deepEqual(g2.groups.filter((x) => x.parent === null).map((x) => x.label), p.graph.lanes);
  const t = new GroupTree(g2);
  assert.deepEqual(t.ancestors("t:1"), ["lane:1/g:job:0/layer0", "lane:1/g:job:0", "lane:1"]);
  assert.deepEqual(t.ancestors("t:0"), ["lane:0/g:job:0/layer0", "lane:0/g:job:0", "lane:0"]);
  assert.equal(g2.edges, p.graph.edges);
  let n = 0;
  for (const id of ["lane:0", "lane:1"]) n += t.size.get(id)!;
  assert.equal(n, 200);
  const one = { ...p.graph, lanes: ["only"] };
  assert.equal(groupByLane(one), one);  // one lane: nothing to group by
});
