// The notebook output renderer (output.ts, saved.ts): the saved view it draws, and its handover to a live widget, with
// a fake ipywidgets renderer that behaves as @jupyter-widgets/jupyterlab-manager's does (text only when it has no
// view: "Loading widget...", "Error displaying widget: model not found"; the view's element when it has one).
import assert from "node:assert/strict";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { installDom } from "./dom.js";

installDom();
const g = globalThis as Record<string, unknown>;
g.MutationObserver = (g.window as Record<string, unknown>).MutationObserver;
g.CustomEvent = (g.window as Record<string, unknown>).CustomEvent;
g.Event = (g.window as Record<string, unknown>).Event;
g.DragEvent ??= class extends (g.window as { MouseEvent: typeof MouseEvent }).MouseEvent {};  // jsdom has none; lumino subclasses it
// lumino reads navigator.platform when it loads; node 20 has no navigator
Object.defineProperty(globalThis, "navigator", { value: (g.window as { navigator: unknown }).navigator, configurable: true });
const { mlpJobset, bigPlan } = await import("../src/fixtures.js");
const { MIME_TYPES } = await import("../src/payload.js");
const { chosenMime, savedUpdate, savedViews, storedFromLive, VIEW_EVENT, WIDGET_MIME } = await import("../src/saved.js");
const { OutputRenderer } = await import("../src/output.js");
const { Widget } = await import("@lumino/widgets");

/** Version 2 as payload_pack.py writes it, with Node's gzip (an encoder independent of the browser code). */
function pack(p: Record<string, unknown>): Record<string, unknown> {
  const { flowlab_payload: _v, kind, title, summary, ...rest } = p;
  const body = gzipSync(Buffer.from(JSON.stringify(rest), "utf-8")).toString("base64");
  return { flowlab_payload: 2, kind, title, ...(summary ? { summary } : {}), encoding: "gzip+base64", body };
}
const live = (stored: Record<string, unknown>): Record<string, unknown> => {
  const bytes = Buffer.from(stored.body as string, "base64");
  return { ...stored, encoding: "gzip", body: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
};

const JOBS = pack(mlpJobset(2) as unknown as Record<string, unknown>);
const PLAN = pack(bigPlan(40, 2, 2) as unknown as Record<string, unknown>);
const BUNDLE = { [MIME_TYPES.jobset]: JOBS, [MIME_TYPES.plan]: PLAN, "text/plain": "flowjob: 2 jobs" };

interface FakeModel { data: Record<string, unknown>; metadata: Record<string, unknown>; trusted: boolean; setData(o: { data?: Record<string, unknown>; metadata?: Record<string, unknown> }): void; writes: number }
function model(data: Record<string, unknown>, metadata: Record<string, unknown> = {}, trusted = true): FakeModel {
  return {
    data, metadata, trusted, writes: 0,
    setData(o) { this.writes++; if (o.data) this.data = o.data; if (o.metadata) this.metadata = o.metadata; },
  };
}

/** ipywidgets' WidgetRenderer, as far as the output renderer sees it: `outcome` is what renderModel ends with. */
class FakeWidgetRenderer extends Widget {
  constructor(private readonly outcome: "view" | "not found" | "loading" | "disconnected", private readonly ms = 0) { super(); }
  async renderModel(): Promise<void> {
    this.node.textContent = "Loading widget...";
    await new Promise((r) => setTimeout(r, this.ms));
    if (this.outcome === "not found") this.node.textContent = "Error displaying widget: model not found";
    if (this.outcome === "view" || this.outcome === "disconnected") {
      this.node.textContent = "";
      const view = Object.assign(document.createElement("div"), { className: "fake-view" });
      if (this.outcome === "disconnected") view.classList.add("jupyter-widgets-disconnected");
      this.node.append(view);
    }
  }
}
function host(renderer: () => FakeWidgetRenderer | null, ready: Promise<boolean> = Promise.resolve(false)) {
  let created = 0;
  return { get created() { return created; }, create() { const r = renderer(); if (r) created++; return r; }, whenReady: () => ready };
}
const mount = (r: InstanceType<typeof OutputRenderer>): void => { Widget.attach(r, document.body); };
const until = async (cond: () => boolean, what: string, ms = 3000): Promise<void> => {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};
const shownTitle = (r: InstanceType<typeof OutputRenderer>): string =>
  r.node.querySelector(".flowlab-saved:not(.lm-mod-hidden) .fl-title")?.textContent ?? "";
const visibleText = (r: InstanceType<typeof OutputRenderer>): string =>
  [...r.node.children].filter((c) => !c.classList.contains("lm-mod-hidden")).map((c) => c.textContent).join(" ");

test("the saved view: the one the metadata names, else the Plan; every saved one listed", () => {
  assert.equal(chosenMime(BUNDLE), MIME_TYPES.plan);
  assert.equal(chosenMime(BUNDLE, { flowlab: { view: "jobs" } }), MIME_TYPES.jobset);
  assert.equal(chosenMime(BUNDLE, { flowlab: { view: "user" } }), MIME_TYPES.jobset);
  assert.equal(chosenMime({ [MIME_TYPES.jobset]: JOBS }, { flowlab: { view: "plan" } }), MIME_TYPES.jobset);
  assert.equal(chosenMime({ "text/plain": "x" }), null);
  assert.deepEqual(savedViews(BUNDLE, { flowlab: { view: "user" } }).map((v) => v[0]), ["user", "plan"]);
});

test("a live payload is stored as the notebook stores it: the same base64 text, decoding to the same payload", () => {
  const stored = storedFromLive(live(JOBS));
  assert.deepEqual(stored, JOBS);
  assert.equal(storedFromLive({ kind: "plan", encoding: "zip", body: "x" }), null);
});

test("writing a view back: nothing when the output already says it, else its payload and its name", () => {
  assert.equal(savedUpdate(BUNDLE, {}, { view: "plan", packed: live(PLAN) }), null);  // the notebook stays clean
  const user = pack({ ...(mlpJobset(1) as unknown as Record<string, unknown>), title: "user jobs: mlp" });
  const u = savedUpdate(BUNDLE, {}, { view: "user", packed: live(user) });
  assert.ok(u);
  assert.deepEqual(u.metadata, { flowlab: { view: "user" } });
  assert.deepEqual(u.data[MIME_TYPES.jobset], user);
  assert.equal(u.data[MIME_TYPES.plan], PLAN);
  assert.equal(savedUpdate(u.data, u.metadata, { view: "user", packed: live(user) }), null);
  assert.equal(savedUpdate(BUNDLE, {}, { view: "plan", packed: live(JOBS) }), null);  // a name that does not fit
});

test("no widget in the output: the saved Plan draws, with a switch to the saved jobs", async () => {
  const r = new OutputRenderer(host(() => { throw new Error("no widget to create"); }));
  mount(r);
  await r.renderModel(model(BUNDLE) as never);
  assert.equal(r.mode, "static");
  assert.equal(shownTitle(r), PLAN.title);
  const buttons = [...r.node.querySelectorAll(".fl-views button")].map((b) => b.textContent);
  assert.deepEqual(buttons, ["jobs", "plan"]);
  (r.node.querySelector(".fl-views button") as HTMLButtonElement).click();
  await until(() => shownTitle(r) === JOBS.title, "the jobs view");
  r.dispose();
});

test("a widget whose model is gone (a fresh kernel): the saved view, and none of the widget's error text", async () => {
  const h = host(() => new FakeWidgetRenderer("not found", 50));
  const r = new OutputRenderer(h);
  mount(r);
  await r.renderModel(model({ ...BUNDLE, [WIDGET_MIME]: { model_id: "m1", version_major: 2 } }) as never);
  await new Promise((res) => setTimeout(res, 100));
  assert.equal(h.created, 1);
  assert.equal(r.mode, "static");
  assert.ok(shownTitle(r));
  assert.ok(!visibleText(r).includes("Error displaying widget"), visibleText(r));
  r.dispose();
});

test("a live widget takes the output over; when it closes, the saved view comes back", async () => {
  let renderer: FakeWidgetRenderer | null = null;
  const r = new OutputRenderer(host(() => (renderer = new FakeWidgetRenderer("view", 20))));
  mount(r);
  const m = model({ ...BUNDLE, [WIDGET_MIME]: { model_id: "m1", version_major: 2 } });
  await r.renderModel(m as never);
  assert.equal(r.mode, "widget");
  assert.equal(r.node.querySelector(".flowlab-saved .fl-node"), null);  // the saved view was dropped, not kept under it
  assert.ok(r.node.querySelector(".flowlab-live:not(.lm-mod-hidden) .fake-view"));
  // the widget draws another view: the output keeps it (its payload and its name), and stays the live widget
  const user = pack({ ...(mlpJobset(1) as unknown as Record<string, unknown>), title: "user jobs: mlp" });
  r.node.querySelector(".fake-view")!.dispatchEvent(new CustomEvent(VIEW_EVENT, { bubbles: true, detail: { view: "user", packed: live(user) } }));
  assert.equal(m.writes, 1);
  assert.deepEqual(m.metadata, { flowlab: { view: "user" } });
  await r.renderModel(m as never);  // JupyterLab renders the changed output with the same renderer
  assert.equal(r.mode, "widget");
  renderer!.node.replaceChildren();  // ipywidgets removes a closed widget's view
  await until(() => r.mode === "static", "the saved view after the widget closed");
  await until(() => shownTitle(r) === "user jobs: mlp", "the view the widget last drew");
  r.dispose();
});

test("no kernel yet: the saved view first, the widget once the kernel's widget manager is there", async () => {
  let bound = false;
  let ready!: (v: boolean) => void;
  const r = new OutputRenderer(host(() => (bound ? new FakeWidgetRenderer("view") : null), new Promise((res) => { ready = res; })));
  mount(r);
  await r.renderModel(model({ ...BUNDLE, [WIDGET_MIME]: { model_id: "m1", version_major: 2 } }) as never);
  assert.equal(r.mode, "static");
  bound = true;
  ready(true);
  await until(() => r.mode === "widget", "the live widget");
  r.dispose();
});

test("a widget that never loads (no kernel, saved widget state) and an untrusted output keep the saved view", async () => {
  const h = host(() => new FakeWidgetRenderer("loading"));
  const r = new OutputRenderer(h);
  mount(r);
  await r.renderModel(model({ ...BUNDLE, [WIDGET_MIME]: { model_id: "m1", version_major: 2 } }) as never);
  assert.equal(r.mode, "static");
  assert.ok(!visibleText(r).includes("Loading widget"), visibleText(r));
  const u = new OutputRenderer(h);
  mount(u);
  await u.renderModel(model({ ...BUNDLE, [WIDGET_MIME]: { model_id: "m2", version_major: 2 } }, {}, false) as never);
  assert.equal(h.created, 1);  // an untrusted output never runs a widget
  assert.equal(u.mode, "static");
  r.dispose();
  u.dispose();
});

test("a widget restored from saved state with no kernel behind it keeps the saved view until its model connects", async () => {
  let renderer: FakeWidgetRenderer | null = null;
  const r = new OutputRenderer(host(() => (renderer = new FakeWidgetRenderer("disconnected"))));
  mount(r);
  await r.renderModel(model({ ...BUNDLE, [WIDGET_MIME]: { model_id: "m1", version_major: 2 } }) as never);
  await new Promise((res) => setTimeout(res, 50));
  assert.equal(r.mode, "static");
  assert.equal(shownTitle(r), PLAN.title);
  renderer!.node.querySelector(".fake-view")!.classList.remove("jupyter-widgets-disconnected");  // comm_live
  await until(() => r.mode === "widget", "the connected widget");
  r.dispose();
});
