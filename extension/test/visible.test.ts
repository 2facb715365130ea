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

test("dense views with hubs (a tick controlling every op, an optimizer fed by every layer) lay out in seconds, not minutes", () => {
  // The class of h/nbpy's real Plans: ~300 boxes, ~3 edges per box, a few nodes of degree > 100. dagre's compound
  // layout took 45-160 s on them and threw "Not possible to find intersection inside of the rectangle".
  const p = mlpJobset(30);
  const g = p.graph;
  const ops = g.nodes.filter((n) => n.parent?.startsWith("g:job:1/")).map((n) => n.id);
  g.nodes.push({ id: "o:tick", label: "System-AutoTick-SourceTick", kind: "op", parent: "g:job:3", classes: [] });
  g.nodes.push({ id: "o:opt", label: "optimizer", kind: "op", parent: "g:job:1", classes: [] });
  ops.forEach((id, i) => {
    g.edges.push({ id: `hub:c${i}`, source: "o:tick", target: id, kind: "ctrl" });
    if (id.endsWith("sgd_w")) g.edges.push({ id: `hub:d${i}`, source: id, target: "o:opt", kind: "data", label: "f32[512,512]" });
    if (id.endsWith("matmul")) g.edges.push({ id: `hub:x${i}`, source: "o:in", target: id, kind: "ctrl" });
  });
  const t = new GroupTree(g);
  for (const id of t.groups.keys()) t.collapsed.delete(id);
  t.bound(MAX_VISIBLE);
  const v = t.visible();
  assert.ok(v.nodes.length > 200 && v.edges.length > 2 * v.nodes.length, `${v.nodes.length} boxes, ${v.edges.length} edges`);
  const lay = layoutSync(v);
  assert.ok(lay.ms < 5000, `layout took ${lay.ms.toFixed(0)} ms`);
  const boxes = [...lay.nodes.values()];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    assert.ok(a.x + a.w <= b.x + 0.5 || b.x + b.w <= a.x + 0.5 || a.y + a.h <= b.y + 0.5 || b.y + b.h <= a.y + 0.5, `${a.node.id} overlaps ${b.node.id}`);
  }
  assert.ok(lay.edges.every((e) => e.points.length >= 2));
  const hubEdges = lay.edges.filter((e) => e.edge.source === "o:tick" || e.edge.target === "o:opt");
  assert.ok(hubEdges.length > 200 && hubEdges.every((e) => e.aux), "hub edges are drawn, straight, outside the ranking");
  assert.ok(lay.edges.filter((e) => e.edge.kind === "data" && e.edge.target !== "o:opt").some((e) => !e.aux));
});
