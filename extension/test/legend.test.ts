import assert from "node:assert/strict";
import { test } from "node:test";
import { laneLabels } from "../src/legend.js";

test("the common part of the lane names is written once; each lane keeps what differs", () => {
  const threads = [0, 2, 3, 13].map((t) => `machine 0 / thread ${t}`);
  assert.deepEqual(laneLabels(threads), { head: "machine 0 / thread", short: ["0", "2", "3", "13"] });
  const two = ["machine 0 / thread 1", "machine 1 / thread 1", "machine 1 / thread 4"];
  assert.deepEqual(laneLabels(two), { head: "machine:thread", short: ["0:1", "1:1", "1:4"] });
});

test("names without that structure are shown whole", () => {
  assert.deepEqual(laneLabels(["gpu a", "cpu b"]), { head: "", short: ["gpu a", "cpu b"] });
  assert.deepEqual(laneLabels(["machine 0 / thread 1", "device 3"]), { head: "", short: ["machine 0 / thread 1", "device 3"] });
});
