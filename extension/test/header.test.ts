import assert from "node:assert/strict";
import { test } from "node:test";
import { headerText, headerWidth, layoutSync } from "../src/layoutcore.js";
import type { Visible } from "../src/visible.js";

test("a group's header is whole in the width the layout gives it; only a very long label is cut, never the count", () => {
  for (const [label, count] of [["job_0 (user)", 1000], ["layer3", 40], ["machine 0 / thread 0", 5000], ["x", 1]] as const) {
    assert.equal(headerText(label, count, headerWidth(label, count)), `− ${label} (${count})`);
  }
  const long = "a".repeat(200);
  const cut = headerText(long, 7, headerWidth(long, 7));
  assert.match(cut, /^− a+… \(7\)$/);
  assert.ok(cut.length < 70, cut);
});

test("a group narrower than its header is widened to hold it, its one box centred", () => {
  const v: Visible = { key: "k", edges: [],
    clusters: [{ id: "g", label: "a_job_with_a_long_name (user)", parent: null, count: 1000 }],
    nodes: [{ id: "n", label: "g1", kind: "group", parent: "g", count: 40 }] };
  const lay = layoutSync(v);
  const c = lay.clusters[0], n = lay.nodes.get("n")!;
  assert.ok(c.w >= headerWidth(c.label, c.count), `${c.w} < ${headerWidth(c.label, c.count)}`);
  assert.equal(headerText(c.label, c.count, c.w), "− a_job_with_a_long_name (user) (1000)");
  assert.ok(Math.abs(n.x + n.w / 2 - (c.x + c.w / 2)) < 1e-6, `box at ${n.x}..${n.x + n.w} in ${c.x}..${c.x + c.w}`);
});
