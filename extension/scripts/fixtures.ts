// Writes the fixture payloads the browser tests load (tests/e2e/fixtures/*.json). Run: npm run fixtures
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { mlpJobset, smallRun } from "../src/fixtures.js";
import { PAYLOAD_VERSION } from "../src/payload.js";

const out = join(process.cwd(), "..", "tests", "e2e", "fixtures");
mkdirSync(out, { recursive: true });
const future = { ...smallRun(), flowlab_payload: PAYLOAD_VERSION + 1 };
const files: Record<string, unknown> = { "jobset_mlp30.json": mlpJobset(), "run_small.json": smallRun(),
  "future.json": future, "malformed.json": { flowlab_payload: 1, kind: "plan", title: "broken", graph: { nodes: [{ id: 3 }] } } };
for (const [name, data] of Object.entries(files)) writeFileSync(join(out, name), JSON.stringify(data) + "\n");
console.log(`wrote ${Object.keys(files).length} fixtures to ${out}`);
