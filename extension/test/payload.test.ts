import assert from "node:assert/strict";
import { test } from "node:test";
import { mlpJobset, smallRun } from "../src/fixtures.js";
import { parsePayload, PAYLOAD_VERSION } from "../src/payload.js";

test("a valid payload of each kind parses", () => {
  for (const p of [mlpJobset(3), smallRun(), { flowlab_payload: 1, kind: "plan", title: "t", summary: { tasks: 0 }, graph: { nodes: [] } }]) {
    const r = parsePayload(JSON.parse(JSON.stringify(p)));
    assert.ok(r.ok, r.ok ? "" : r.message);
  }
  const r = parsePayload(JSON.stringify(smallRun()));  // a JSON string (some front ends hand over text)
  assert.ok(r.ok && r.payload.kind === "run" && r.payload.acts.length === 6);
});

test("a newer payload version says so, naming both versions", () => {
  const r = parsePayload({ ...smallRun(), flowlab_payload: PAYLOAD_VERSION + 1 });
  assert.equal(r.ok, false);
  assert.ok(!r.ok && r.newer);
  assert.match(!r.ok ? r.message : "", /newer flowlab \(payload version 3\); this viewer reads versions 1 to 2/);
});

test("malformed payloads give a message that says where", () => {
  const cases: [unknown, RegExp][] = [
    [null, /payload: expected an object, got null/],
    ["{not json", /not valid JSON/],
    [{ kind: "plan" }, /payload\.flowlab_payload: expected the payload version/],
    [{ flowlab_payload: 1, kind: "movie", graph: { nodes: [] } }, /payload\.kind: expected one of jobset, plan, run, compare, rewrites, got "movie"/],
    [{ flowlab_payload: 1, kind: "rewrites", steps: [] }, /payload\.steps: expected at least one rewrite/],
    [{ flowlab_payload: 1, kind: "rewrites", steps: [{ name: "AutoSinkTick", compare: { a: {} } }] },
      /payload\.a: .*expected/],
    [{ flowlab_payload: 1, kind: "compare", a: { flowlab_payload: 1, kind: "plan" }, b: {} }, /payload\.a: graph: expected an object/],
    [{ flowlab_payload: 1, kind: "compare", a: { flowlab_payload: 1, kind: "plan", graph: { nodes: [] } },
      b: { flowlab_payload: 1, kind: "run", graph: { nodes: [] }, acts: [] } }, /payload\.b\.kind: expected jobset or plan, got run/],
    [{ flowlab_payload: 1, kind: "compare", a: { flowlab_payload: 1, kind: "plan", graph: { nodes: [] } },
      b: { flowlab_payload: 1, kind: "plan", graph: { nodes: [] } }, pairs: [["x"]] }, /payload\.pairs\[0\]: expected \[id on the left, id on the right\]/],
    [{ flowlab_payload: 1, kind: "plan", title: "x" }, /graph: expected an object, got undefined/],
    [{ flowlab_payload: 1, kind: "plan", graph: { nodes: [{ id: 3 }] } }, /graph\.nodes\[0\]\.id: expected a string, got number/],
    [{ flowlab_payload: 1, kind: "plan", graph: { nodes: [{ id: "a", label: "a", kind: "task", parent: "nope" }] } },
      /graph\.nodes\[0\]\.parent: no group has the id "nope"/],
    [{ flowlab_payload: 1, kind: "plan", graph: { nodes: [{ id: "a", label: "a", kind: "task", parent: null }],
      edges: [{ id: "e", source: "a", target: "b", kind: "data" }] } }, /graph\.edges\[0\]\.target: no node has the id "b"/],
    [{ flowlab_payload: 1, kind: "plan", graph: { nodes: [{ id: "a", label: "a", kind: "task", parent: null }, { id: "a", label: "b", kind: "op", parent: null }] } },
      /the id "a" appears twice/],
    [{ flowlab_payload: 1, kind: "plan", graph: { nodes: [], groups: [{ id: "g", label: "g", parent: "h" }, { id: "h", label: "h", parent: "g" }] } },
      /its own ancestor/],
    [{ flowlab_payload: 1, kind: "run", graph: { nodes: [] } }, /payload\.acts: expected a list/],
  ];
  for (const [data, re] of cases) {
    const r = parsePayload(data);
    assert.equal(r.ok, false, `accepted ${JSON.stringify(data)}`);
    assert.match(!r.ok ? r.message : "", re);
    assert.match(!r.ok ? r.message : "", /^this flowlab output cannot be shown: /);
  }
});
