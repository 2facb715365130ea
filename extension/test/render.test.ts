import assert from "node:assert/strict";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { installDom } from "./dom.js";

installDom();
const { XSS, mlpJobset, smallRun } = await import("../src/fixtures.js");
const { renderPayload } = await import("../src/views.js");
const { DebuggerView } = await import("../src/debugger.js");

test("names that look like HTML are shown as text, never parsed", async () => {
  const el = document.createElement("div");
  document.body.append(el);
  const r = renderPayload(el, mlpJobset(2));
  await r.graph!.ready;
  r.graph!.select("o:xss");
  assert.equal(document.querySelectorAll("img").length, 0);
  assert.ok(el.querySelector(".fl-detail")!.textContent!.includes(XSS));
  const labels = [...el.querySelectorAll(".fl-node .fl-label")].map((t) => t.textContent);
  assert.ok(labels.some((l) => l!.startsWith("<img")), labels.join("|"));
  const run = renderPayload(el, smallRun());
  await run.graph!.ready;
  run.run!.show(4);
  assert.equal(document.querySelectorAll("img").length, 0);
  assert.ok(el.textContent!.includes(`${XSS}`));
  const dbg = new DebuggerView(() => {});
  el.append(dbg.root);
  dbg.setState({ status: XSS, error: XSS, actors: [{ id: "t:4", name: XSS, job: XSS, state: "ready", why_blocked: XSS, acts: 0 }],
    breakpoints: [{ id: 1, kind: "op", target: XSS, text: XSS }], inspected: { regst: XSS, lbn: XSS, written: false } });
  assert.equal(document.querySelectorAll("img").length, 0);
  el.remove();
});

test("a future or malformed payload shows a clear message and the text fallback, not a blank", () => {
  const el = document.createElement("div");
  renderPayload(el, { ...smallRun(), flowlab_payload: 7 }, "<FlowjobResult 3 jobs>");
  assert.match(el.querySelector(".fl-error")!.textContent!, /newer flowlab \(payload version 7\)/);
  assert.equal(el.querySelector(".fl-fallback")!.textContent, "<FlowjobResult 3 jobs>");
  renderPayload(el, { flowlab_payload: 1, kind: "plan" });
  assert.match(el.querySelector(".fl-error")!.textContent!, /cannot be shown: graph: expected an object/);
});

test("clicking a collapsed group box expands it; the header of the open group collapses it", async () => {
  const el = document.createElement("div");
  const r = renderPayload(el, mlpJobset(3));
  const g = r.graph!;
  await g.ready;
  assert.ok(el.querySelector('[data-id="g:job:1/fc1"]'), "fc1 is drawn as one box");
  await g.toggleGroup("g:job:1/fc1");
  assert.ok(el.querySelector('[data-id="o:fc1-matmul"]'));
  assert.equal(el.querySelector('[data-id="g:job:1/fc1"]'), null);
  assert.ok(el.querySelector('[data-group="g:job:1/fc1"]'));
  await g.toggleGroup("g:job:1/fc1");
  assert.equal(el.querySelector('[data-id="o:fc1-matmul"]'), null);
});

test("marks land on the shape's own group, or on the collapsed box holding a hidden node", async () => {
  const el = document.createElement("div");
  const r = renderPayload(el, mlpJobset(3));
  const g = r.graph!;
  await g.ready;
  g.mark("next", ["o:fc2-relu"]);  // inside the collapsed fc2
  assert.ok(el.querySelector('[data-id="g:job:1/fc2"]')!.classList.contains("next"));
  g.setQuery("loss");
  assert.ok(el.querySelector('[data-id="o:loss"]')!.classList.contains("match"));
  assert.equal(el.querySelector(".fl-count")!.textContent, "1 match");
});

test("the canvas says busy while a layout or a focus move runs, and idle once the view settled", async () => {
  const el = document.createElement("div");
  const r = renderPayload(el, mlpJobset(3));
  const g = r.graph!;
  const canvas = el.querySelector<HTMLElement>(".fl-canvas")!;
  assert.equal(canvas.dataset.layout, "busy");  // the first layout is under way
  await g.ready;
  assert.equal(canvas.dataset.layout, "idle");
  const moving = g.focus("o:fc2-relu");  // hidden in the collapsed fc2: reveals it with a new layout
  assert.equal(canvas.dataset.layout, "busy");
  await moving;
  assert.equal(canvas.dataset.layout, "idle");
  assert.ok(el.querySelector('[data-id="o:fc2-relu"]'), "the focused node is drawn once idle");
});

test("the debugger filters and sorts 1,000 actors, a page at a time, and clears the error with the next state", () => {
  const sent: unknown[] = [];
  const d = new DebuggerView((m) => sent.push(m));
  const actors = Array.from({ length: 1000 }, (_, i) => ({ id: `t:${i}`, name: `actor_${i}`, job: i % 2 ? "train" : "main",
    state: i % 3 ? "blocked" : "ready", why_blocked: "waiting for register r0", acts: i % 7 }));
  d.setState({ status: "step", error: "KeyError: 'Input_0/y_0'", actors, next_actor: "actor_500", next_node: "t:500" });
  assert.equal(d.root.querySelector(".fl-error")!.textContent, "KeyError: 'Input_0/y_0'");
  assert.equal(d.root.querySelectorAll("table.fl-actors tr").length, 51);  // header + one page
  const job = d.root.querySelectorAll("select")[0] as HTMLSelectElement;
  job.value = "train";
  job.dispatchEvent(new window.Event("change"));
  assert.equal(d.filtered().length, 500);
  assert.ok(d.filtered().every((a) => a.job === "train"));
  assert.ok(d.filtered().every((a, i, all) => i === 0 || all[i - 1].acts >= a.acts));  // default sort: most acts first
  d.setState({ status: "step", error: null, actors });
  assert.equal((d.root.querySelector(".fl-error") as HTMLElement).style.display, "none");
});

test("a detail value naming another node links to it: clicking selects and reveals that node", async () => {
  const el = document.createElement("div");
  const p = mlpJobset(2);
  p.graph.details["d:o:loss"].sections.push({ title: "register", rows: [["producer", "o:fc1-relu"], ["consumers", "o:xss, o:out"]] });
  const r = renderPayload(el, p);
  const g = r.graph!;
  await g.ready;
  g.select("o:loss");
  const links = [...el.querySelectorAll(".fl-detail a.fl-link")].map((a) => a.textContent);
  assert.deepEqual(links, ["train_job (user)", "fc1-relu", "<img src=x onerror=alert(1)>", "Return_0"]);
  (el.querySelectorAll(".fl-detail a.fl-link")[1] as HTMLElement).click();
  await new Promise((res) => setTimeout(res, 50));
  assert.equal(g.selected, "o:fc1-relu");
  assert.ok(g.tree.isVisible("o:fc1-relu"), "the layer holding it was opened");
  assert.equal(document.querySelectorAll("img").length, 0);
});

class FakeModel {
  handlers: Record<string, ((...a: unknown[]) => void)[]> = {};
  sent: unknown[] = [];
  constructor(public traits: Record<string, unknown>) {}
  get(k: string): unknown { return this.traits[k]; }
  set(k: string, v: unknown): void { this.traits[k] = v; for (const f of this.handlers[`change:${k}`] ?? []) f(); }
  save_changes(): void {}
  on(e: string, f: (...a: unknown[]) => void): void { (this.handlers[e] ??= []).push(f); }
  off(e?: string, f?: (...a: unknown[]) => void): void { if (e) this.handlers[e] = (this.handlers[e] ?? []).filter((g) => g !== f); }
  send(m: unknown): void { this.sent.push(m); }
  emit(e: string, ...a: unknown[]): void { for (const f of this.handlers[e] ?? []) f(...a); }
}

test("the anywidget contract: query and selected traits both ways, focus messages, debug toggle, cleanup", async () => {
  const { render } = (await import("../src/widget.js")).default;
  const el = document.createElement("div");
  document.body.append(el);
  const m = new FakeModel({ payload: mlpJobset(3), selected: "", query: "" });
  const cleanup = render({ model: m, el });
  await new Promise((res) => setTimeout(res, 300));
  m.set("query", "relu");
  assert.equal(el.querySelector(".fl-count")!.textContent, "6 matches");  // fcN-relu and fcN-relu_grad
  m.emit("msg:custom", { type: "focus", id: "o:fc2-relu" });
  await new Promise((res) => setTimeout(res, 300));
  assert.ok(el.querySelector('[data-id="o:fc2-relu"]')!.classList.contains("sel"));
  assert.equal(el.querySelector(".fl-detail-title")!.textContent, "fc2-relu");
  const search = el.querySelector(".fl-search") as HTMLInputElement;
  search.value = "loss";
  search.dispatchEvent(new window.Event("input"));
  assert.equal(m.traits.query, "loss");
  [...el.querySelectorAll("button")].find((b) => b.textContent === "debug")!.click();
  assert.deepEqual(m.sent.at(-1), { type: "debug" });
  m.set("payload", { ...mlpJobset(1), title: "replaced" });
  await new Promise((res) => setTimeout(res, 50));  // a payload is decoded (asynchronously) before it draws
  assert.equal(el.querySelector(".fl-title")!.textContent, "replaced");
  cleanup();
  assert.equal(m.handlers["change:payload"].length, 0);
  assert.equal(m.handlers["change:packed"].length, 0);
  el.remove();
});

/** A payload as flowlab's widgets send it (the `packed` trait): version 2 whose body is the gzip bytes, as ipywidgets
 * hands a buffer to the model (a DataView); gzipped here by Node, independently of the Python packer. */
function packedTrait(p: Record<string, unknown>): Record<string, unknown> {
  const { flowlab_payload: _v, kind, title, ...rest } = p;
  const gz = gzipSync(Buffer.from(JSON.stringify(rest), "utf-8"));
  return { flowlab_payload: 2, kind, title, encoding: "gzip", body: new DataView(gz.buffer, gz.byteOffset, gz.byteLength) };
}

test("the widgets draw the binary `packed` trait before the version-1 `payload`, the latest change winning", async () => {
  const { render } = (await import("../src/widget.js")).default;
  const el = document.createElement("div");
  document.body.append(el);
  const m = new FakeModel({ packed: packedTrait(mlpJobset(3) as unknown as Record<string, unknown>),
    payload: { ...mlpJobset(1), title: "the old trait" }, selected: "", query: "" });
  const cleanup = render({ model: m, el });
  await new Promise((res) => setTimeout(res, 300));
  assert.equal(el.querySelector(".fl-title")!.textContent, mlpJobset(3).title);
  assert.ok(el.querySelectorAll(".fl-node").length > 3);
  assert.equal(el.querySelectorAll(".fl-error").length, 0);
  // two changes in a row: the second decodes last-or-first, only it is drawn
  m.set("packed", packedTrait({ ...mlpJobset(2), title: "first" } as unknown as Record<string, unknown>));
  m.set("packed", packedTrait({ ...mlpJobset(1), title: "second" } as unknown as Record<string, unknown>));
  await new Promise((res) => setTimeout(res, 100));
  assert.equal(el.querySelector(".fl-title")!.textContent, "second");
  m.set("packed", { ...packedTrait(mlpJobset(1) as unknown as Record<string, unknown>), body: "H4sI" });
  await new Promise((res) => setTimeout(res, 50));
  assert.match(el.querySelector(".fl-error")!.textContent!, /payload\.body: encoding "gzip" has a binary body \(a widget buffer\), got the string "H4sI"/);
  m.set("packed", packedTrait({ ...mlpJobset(1), title: "after close" } as unknown as Record<string, unknown>));
  cleanup();  // closed while it decodes: nothing is drawn into the closed view
  await new Promise((res) => setTimeout(res, 100));
  assert.notEqual(el.querySelector(".fl-title")?.textContent, "after close");
  el.remove();
  const d = document.createElement("div");
  const dm = new FakeModel({ packed: packedTrait(smallRun() as unknown as Record<string, unknown>),
    state: { status: "ready", next_node: "t:1", actors: [] } });
  render({ model: dm, el: d });  // the debugger
  await new Promise((res) => setTimeout(res, 300));
  assert.ok(d.querySelector('[data-id="t:1"]')!.classList.contains("next"));
});

test("the debugger widget renders from `payload` and `state`, and redraws on a new state", async () => {
  const { render } = (await import("../src/widget.js")).default;
  const el = document.createElement("div");
  const m = new FakeModel({ payload: smallRun(), state: { status: "ready", next_node: "t:1", actors: [] } });
  render({ model: m, el });
  await new Promise((res) => setTimeout(res, 300));
  assert.ok(el.querySelector('[data-id="t:1"]')!.classList.contains("next"));
  m.set("state", { status: "stepped", next_node: "t:2", actors: [], error: "no blob named 'x'" });
  assert.ok(el.querySelector('[data-id="t:2"]')!.classList.contains("next"));
  assert.ok(!el.querySelector('[data-id="t:1"]')!.classList.contains("next"));
  assert.equal(el.querySelector(".fl-error")!.textContent, "no blob named 'x'");
  m.set("state", { status: "finished", finished: true, next_node: "t:2", actors: [] });
  assert.equal(el.querySelectorAll(".next").length, 0, "nothing is next once the call finished");
});

test("the module's only render is its default export's (anywidget warns about a named one)", async () => {
  const mod = await import("../src/widget.js");
  assert.equal("render" in mod, false);
  assert.equal(typeof mod.default.render, "function");
});
