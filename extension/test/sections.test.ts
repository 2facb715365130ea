// The Plan payload's sections drawn by other views (src/stuck.ts, src/provenance.ts, src/schedview.ts): a well-formed
// section is carried through parsePayload as it is, and a malformed one is a message naming the field, not a
// broken view.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parsePayload } from "../src/payload.js";

const graph = { nodes: [{ id: "t:1", label: "a", kind: "task", parent: null }, { id: "t:2", label: "b", kind: "task", parent: null }],
  groups: [], edges: [], lanes: [], details: {} };
const plan = (extra: Record<string, unknown>): unknown => ({ flowlab_payload: 1, kind: "plan", title: "p", graph, summary: {}, ...extra });
const message = (p: ReturnType<typeof parsePayload>): string => (p.ok ? "" : p.message);

test("a stuck section keeps its actors, cycle and edges", () => {
  const stuck = { text: "deadlock", cycle: ["t:1", "t:2"], edges: [["t:1", "t:2", true], ["t:2", "t:1", true]],
    actors: { "t:1": { kind: "cycle", name: "a", waits_on: ["t:2"] }, "t:2": { kind: "cycle", name: "b" } },
    kinds: { cycle: "in the cycle" }, counts: { cycle: 2 } };
  const parsed = parsePayload(plan({ stuck }));
  assert.ok(parsed.ok && parsed.payload.kind === "plan");
  const st = parsed.ok && parsed.payload.kind === "plan" ? parsed.payload.stuck! : null;
  assert.deepEqual(st?.cycle, ["t:1", "t:2"]);
  assert.equal(st?.edges.length, 2);
  assert.deepEqual(st?.actors["t:2"].waits_on, []);  // absent: none
});

test("malformed sections are messages naming the field", () => {
  assert.match(message(parsePayload(plan({ stuck: { actors: { "t:1": { name: "a" } } } }))), /payload\.stuck\.actors\.t:1/);
  assert.match(message(parsePayload(plan({ schedule: { execution: "x" } }))), /payload\.schedule\.schedules/);
  assert.match(message(parsePayload(plan({ schedule: { schedules: [{ steps: [{ name: "a" }] }] } }))),
    /payload\.schedule\.schedules\[0\]\.steps/);
  const rewrites = { kind: "rewrites", steps: [{ name: "AddTasks", compare: { a: plan({}), b: plan({}) } }] };
  assert.match(message(parsePayload(plan({ provenance: { made_by: { "t:1": 3 }, steps: [{ name: "AddTasks" }], rewrites } }))),
    /payload\.provenance\.made_by\.t:1/);
});

test("a schedule section keeps its steps, segments and lanes", () => {
  const step = (node: string) => ({ node, task_id: 1, name: node, op_type: "relu", task_type: "NormalForward", thread: [0, 0],
    reads: [], writes: [], section: null });
  const schedule = { execution: "execution (session): fused", schedules: [{ key: ["j"], acts: 2, replays: 9, runs_on: "fused", text: "",
    steps: [step("t:1"), step("t:2")], segments: [[0, 1]], lanes: [] }] };
  const parsed = parsePayload(plan({ schedule }));
  const sd = parsed.ok && parsed.payload.kind === "plan" ? parsed.payload.schedule! : null;
  assert.deepEqual(sd?.schedules[0].segments, [[0, 1]]);
  assert.equal(sd?.execution, "execution (session): fused");
});
