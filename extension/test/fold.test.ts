import assert from "node:assert/strict";
import { test } from "node:test";
import { layoutSync, rankedEdges } from "../src/layout.js";
import type { GEdge, GGroup, GNode, Graph } from "../src/payload.js";
import { GroupTree } from "../src/visible.js";

// A 30-layer train job as the Plan view shows it opened: each layer a collapsed group (a forward and a backward task),
// data edges both ways between neighbours, and every layer's registers shared through five memory blocks and ticked
// by two control hubs (a layer box with 11 edges: over HUB_DEGREE, though only 4 are data).
function thirtyLayers(): Graph {
  const groups: GGroup[] = [], nodes: GNode[] = [], edges: GEdge[] = [];
  let e = 0;
  const edge = (source: string, target: string, kind: GEdge["kind"]): void => { edges.push({ id: `e${e++}`, source, target, kind, label: "" }); };
  for (let h = 0; h < 5; h++) nodes.push({ id: `hub${h}`, label: `block ${h}`, kind: "memblock", parent: null });
  nodes.push({ id: "tick0", label: "tick0", kind: "op", parent: null }, { id: "tick1", label: "tick1", kind: "op", parent: null });
  for (let l = 0; l < 30; l++) {
    groups.push({ id: `L${l}`, label: `layer${l}`, parent: null, kind: "scope", collapsed: true });
    nodes.push({ id: `f${l}`, label: `f${l}`, kind: "task", parent: `L${l}` }, { id: `b${l}`, label: `b${l}`, kind: "task", parent: `L${l}` });
    if (l) { edge(`f${l - 1}`, `f${l}`, "data"); edge(`b${l}`, `b${l - 1}`, "data"); }
    for (let h = 0; h < 5; h++) edge(`f${l}`, `hub${h}`, "shared_mem");
    edge("tick0", `f${l}`, "ctrl");
    edge("tick1", `b${l}`, "ctrl");
  }
  return { groups, nodes, edges, lanes: [], details: {} };
}

test("a layer's control and shared-memory edges do not make it a hub: its data edges rank it", () => {
  const v = new GroupTree(thirtyLayers()).visible();
  const ranked = rankedEdges(v);
  const data = v.edges.filter((x) => x.kind === "data");
  assert.ok(data.length >= 29 && data.every((x) => ranked.has(x.id)));
  assert.ok(v.edges.filter((x) => x.kind !== "data").every((x) => !ranked.has(x.id)));  // the hubs' fans stay out
});

test("a chain of 30 layers is folded into a few columns, not one row or one column", () => {
  const lay = layoutSync(new GroupTree(thirtyLayers()).visible());
  const boxes = [...lay.nodes.values()].filter((b) => /^layer\d+$/.test(b.node.label));
  assert.equal(boxes.length, 30);
  const rows = new Map<number, number>(), cols = new Set<number>();
  for (const b of boxes) { rows.set(Math.round(b.y), (rows.get(Math.round(b.y)) ?? 0) + 1); cols.add(Math.round(b.x)); }
  assert.ok(Math.max(...rows.values()) <= 3, `a row holds ${Math.max(...rows.values())} layers`);
  assert.ok(cols.size >= 2 && cols.size <= 4, `${cols.size} columns`);
  assert.ok(lay.bounds.h / lay.bounds.w < 3, `${lay.bounds.w} x ${lay.bounds.h}`);
});
