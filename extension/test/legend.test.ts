import assert from "node:assert/strict";
import { test } from "node:test";
import { laneLabels } from "../src/legend.js";

test("the common part of the lane names is written once; each lane keeps what differs", () => {
  const threads = [0, 2, 3, 13].map((t) => `machine 0 / thread ${t}`);
  assert.deepEqual(laneLabels(threads), { head: "machine 0 / thread", short: ["0", "2", "3", "13"] });
  const two = ["machine 0 / thread 1", "machine 1 / thread 1", "machine 1 / thread 4"];
  assert.deepEqual(laneLabels(two), { head: "machine:thread", short: ["0:1", "1:1", "1:4"] });
});

test("flowlab's lane names write their common leading words once", () => {
  const lanes = ["gpu:0 compute", "gpu:0 h2d", "cpu compute 0", "cpu tick"];
  assert.deepEqual(laneLabels(lanes), { head: "", short: lanes });
  assert.deepEqual(laneLabels(["cpu compute 0", "cpu compute 1", "cpu tick"]), { head: "cpu", short: ["compute 0", "compute 1", "tick"] });
  assert.deepEqual(laneLabels(["machine 0 / cpu tick", "machine 0 / cpu compute 0"]), { head: "machine 0 / cpu", short: ["tick", "compute 0"] });
  assert.deepEqual(laneLabels(["cpu compute 0", "cpu compute 1"]), { head: "cpu compute", short: ["0", "1"] });
});

test("names without that structure are shown whole", () => {
  assert.deepEqual(laneLabels(["gpu a", "cpu b"]), { head: "", short: ["gpu a", "cpu b"] });
  assert.deepEqual(laneLabels(["machine 0 / thread 1", "device 3"]), { head: "", short: ["machine 0 / thread 1", "device 3"] });
});
