import assert from "node:assert/strict";
import { test } from "node:test";
import { layoutSync } from "../src/layout.js";
import type { Graph } from "../src/payload.js";
import { GroupTree } from "../src/visible.js";

test("an opened group of boxes with no edges among them is packed into rows, not one rank as wide as all of them", () => {
  const nodes = Array.from({ length: 40 }, (_, i) => ({ id: `t:${i}`, label: `layer3-op${i}`, kind: "task" as const, parent: "L" }));
  const g: Graph = { groups: [{ id: "L", label: "layer3", parent: null, kind: "scope", collapsed: false }], nodes,
    edges: [], lanes: [], details: {} };
  const lay = layoutSync(new GroupTree(g).visible());
  const layer = lay.clusters.find((c) => c.id === "L")!;
  assert.ok(layer.w / layer.h < 3 && layer.w / layer.h > 0.8, `layer is ${layer.w} x ${layer.h}`);
  const boxes = [...lay.nodes.values()];
  for (const a of boxes) for (const b of boxes) {  // no two boxes overlap
    if (a !== b) assert.ok(a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y, `${a.node.id} overlaps ${b.node.id}`);
  }
  // in their order, row by row
  const order = boxes.slice().sort((a, b) => a.y - b.y || a.x - b.x).map((b) => b.node.id);
  assert.deepEqual(order, nodes.map((n) => n.id));
});
