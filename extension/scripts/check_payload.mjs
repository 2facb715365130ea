// Checks payload files with the parser of the built widget module (no npm install needed): prints "ok" or the
// message a viewer would show. Stored payloads (version 2, gzipped) are decoded first, as the views do.
// Usage: node extension/scripts/check_payload.mjs payload.json [...]
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const { readPayload } = await import(join(here, "..", "..", "flowlab", "notebook", "static", "flowlab_widget.js"));
let bad = 0;
for (const f of process.argv.slice(2)) {
  const r = await readPayload(readFileSync(f, "utf8"));
  console.log(`${f}: ${r.ok ? `ok (${r.payload.kind}, ${r.payload.graph.nodes.length} nodes)` : r.message}`);
  if (!r.ok) bad++;
}
process.exit(bad ? 1 : 0);
