// The overlay's colours (src/overlay.ts) against hand values: threshold bins as flowlab/debug/overlay.py's
// Overlay.bin counts them (the edges at or below a value), the gradient's ends and middle, and a malformed section
// refused with a message that names the field.
import assert from "node:assert/strict";
import { test } from "node:test";
import { binOf, colorOf, parseOverlay, valueText } from "../src/overlay.js";
import { parsePayload } from "../src/payload.js";

const base = { metric: "act time", unit: "µs", view: "plan", values: { "t:1": 1, "t:2": 5, "t:3": 10 }, groups: {} };

test("threshold bins count the edges at or below a value, and take that bin's colour", () => {
  const ov = parseOverlay({ ...base, scale: "thresholds", thresholds: [2, 8], colors: ["#000001", "#000002", "#000003"] });
  assert.deepEqual([1, 2, 5, 8, 10].map((v) => binOf(ov, v)), [0, 1, 1, 2, 2]);
  assert.equal(colorOf(ov, 9), "#000003");
  assert.equal(valueText(ov, 5), "5 µs");
});

test("the gradient runs from its first colour at min to its last at max, through the middle one", () => {
  const ov = parseOverlay({ ...base, scale: "gradient", colors: ["#000000", "#808080", "#ffffff"], min: 0, max: 10 });
  assert.equal(colorOf(ov, 0), "#000000");
  assert.equal(colorOf(ov, 5), "#808080");
  assert.equal(colorOf(ov, 10), "#ffffff");
  assert.equal(colorOf(ov, 2.5), "#404040");
});

test("categories name their values", () => {
  const ov = parseOverlay({ ...base, scale: "categories", categories: ["numba", "reference"], colors: ["#aec7e8", "#ffbb78"] });
  assert.equal(valueText(ov, 1), "reference");
  assert.equal(colorOf(ov, 1), "#ffbb78");
});

test("a malformed overlay is a message naming the field, not a broken view", () => {
  const graph = { nodes: [], groups: [], edges: [], lanes: [], details: {} };
  const parsed = parsePayload({ flowlab_payload: 1, kind: "plan", title: "p", graph, summary: {}, overlay: { ...base, scale: "rainbow", colors: ["#fff"] } });
  assert.equal(parsed.ok, false);
  assert.match(!parsed.ok ? parsed.message : "", /payload\.overlay\.scale/);
});
