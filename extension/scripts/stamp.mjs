// The build stamp: a hash of everything the built outputs come from. tests/test_extension_stamp.py recomputes it
// (same algorithm) and fails when the sources changed without `make ext`. Usage: node scripts/stamp.mjs write|check
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const INPUTS = ["src", "package.json", "package-lock.json", "tsconfig.json", "install.json"];

function walk(p) {
  return statSync(p).isDirectory() ? readdirSync(p).flatMap((f) => walk(join(p, f))) : [p];
}

export function digest() {
  const files = INPUTS.flatMap((i) => walk(join(root, i))).map((f) => relative(root, f).split(sep).join("/")).sort();
  const h = createHash("sha256");
  for (const f of files) {
    h.update(f + "\0");
    h.update(readFileSync(join(root, f)));
    h.update("\0");
  }
  return { sources_sha256: h.digest("hex"), files: files.length };
}

const mode = process.argv[2] ?? "check";
const path = join(root, "build-stamp.json");
if (mode === "write") {
  writeFileSync(path, JSON.stringify(digest(), null, 1) + "\n");
} else {
  const want = JSON.parse(readFileSync(path, "utf8")).sources_sha256;
  if (want !== digest().sources_sha256) {
    console.error("extension/ sources changed since the last build: run `make ext`");
    process.exit(1);
  }
}
