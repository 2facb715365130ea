// Payload version 2, as a notebook stores it (flowlab/viz/payload_pack.py): decoded it is the version-1 payload.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { installDom } from "./dom.js";

installDom();
const { mlpJobset, smallRun } = await import("../src/fixtures.js");
const { parsePayload, readPayload } = await import("../src/payload.js");
const { renderPayload, renderStored } = await import("../src/views.js");
const { DebuggerView } = await import("../src/debugger.js");

const FIXTURES = join(process.cwd(), "..", "tests", "e2e", "fixtures");

/** Pack as payload_pack.py does, with Node's own gzip: an encoder independent of the Python one. */
function pack(p: Record<string, unknown>): Record<string, unknown> {
  const { flowlab_payload: _v, kind, title, summary, ...rest } = p;
  const body = gzipSync(Buffer.from(JSON.stringify(rest), "utf-8")).toString("base64");
  return { flowlab_payload: 2, kind, title, ...(summary ? { summary } : {}), encoding: "gzip+base64", body };
}

const strip = (r: ReturnType<typeof parsePayload>) => {
  assert.ok(r.ok, r.ok ? "" : r.message);
  return r.ok ? { ...r.payload, flowlab_payload: 0 } : null;
};

test("a stored payload decodes to everything the version-1 payload had (jobset, run)", async () => {
  for (const p of [mlpJobset(), smallRun()] as unknown as Record<string, unknown>[]) {
    const stored = pack(p);
    assert.deepEqual(strip(await readPayload(stored)), strip(parsePayload(p)));
    assert.deepEqual(strip(await readPayload(JSON.stringify(stored))), strip(parsePayload(p)));  // as text
  }
});

test("the Python producer's stored Plan decodes to its version-1 Plan, node for node and row for row", async () => {
  const v1 = JSON.parse(readFileSync(join(FIXTURES, "nbpy_pad_plan.json"), "utf-8"));
  const v2 = JSON.parse(readFileSync(join(FIXTURES, "stored_pad_plan.json"), "utf-8"));
  assert.equal(v2.flowlab_payload, 2);
  assert.equal(typeof v2.body, "string");
  const a = strip(await readPayload(v2)), b = strip(parsePayload(v1));
  assert.deepEqual(a, b);
  assert.ok(b && Object.keys(b.graph.details).length > 10);
});

test("version 1 still reads and draws; a stored payload read without decoding says how to read it", async () => {
  const el = document.createElement("div");
  const old = JSON.parse(readFileSync(join(FIXTURES, "nbpy_pad_jobset.json"), "utf-8"));
  assert.equal(old.flowlab_payload, 1);
  const r = await renderStored(el, old);
  await r.graph!.ready;
  assert.ok(el.querySelectorAll(".fl-node").length > 5);
  renderPayload(el, pack(smallRun() as unknown as Record<string, unknown>));
  assert.match(el.querySelector(".fl-error")!.textContent!, /payload\.body: a stored \(version 2\) payload must be decoded first/);
});

test("a newer version stored in a way this viewer cannot decode still says it is newer", async () => {
  const r = await readPayload({ flowlab_payload: 3, kind: "plan", title: "t", encoding: "zstd+base64", body: "KLUv/Q==" });
  assert.ok(!r.ok && r.newer, JSON.stringify(r));
  assert.match(!r.ok ? r.message : "", /newer flowlab \(payload version 3\); this viewer reads versions 1 to 2/);
});

test("a damaged stored payload says what is wrong, and the text fallback stays", async () => {
  const good = pack(smallRun() as unknown as Record<string, unknown>);
  const cases: [unknown, RegExp][] = [
    [{ ...good, body: "bm90IGd6aXA=" }, /payload\.body: expected base64 of gzipped JSON, and it does not decode/],
    [{ ...good, encoding: "zstd" }, /payload\.encoding: expected "gzip\+base64", got the string "zstd"/],
    [{ ...good, body: gzipSync(Buffer.from("[1,")).toString("base64") }, /the decompressed body is not valid JSON/],
  ];
  for (const [data, re] of cases) {
    const el = document.createElement("div");
    await renderStored(el, data, "<flowlab plan>");
    assert.match(el.querySelector(".fl-error")!.textContent!, re);
    assert.equal(el.querySelector(".fl-fallback")!.textContent, "<flowlab plan>");
  }
});

test("the run view and the debugger's act view say which kernel tier ran the act", async () => {
  const el = document.createElement("div");
  document.body.append(el);
  const r = renderPayload(el, smallRun());
  await r.graph!.ready;
  const tier = (): string => {
    const row = [...el.querySelectorAll(".fl-run .fl-panel tr")].find((tr) => tr.querySelector("th")?.textContent === "kernel tier");
    return row?.querySelector("td")?.textContent ?? "(no kernel tier row)";
  };
  r.run!.show(0);
  assert.equal(tier(), "reference (the NumPy kernel)");
  r.run!.show(3);
  assert.equal(tier(), "numba (the compiled Numba kernel)");
  r.run!.show(5);
  assert.equal(tier(), "none (no op kernel ran in this act)");
  const dbg = new DebuggerView(() => {});
  el.append(dbg.root);
  const box = dbg.root.querySelector(".fl-last-act") as HTMLElement;
  dbg.setState({ status: "ready", acts: 0 });
  assert.equal(box.style.display, "none");
  dbg.setState({ status: "stepped", acts: 4, last_act: { index: 3, actor: "pad_Job/relu", job: "pad_Job", reads: ["r:2"], writes: ["r:3"], tier: "numba" } });
  assert.equal(box.style.display, "");
  assert.match(box.textContent!, /last act 3: pad_Job\/relu \(pad_Job\)kernel tiernumba \(the compiled Numba kernel\)readr:2wroter:3/);
  el.remove();
});
