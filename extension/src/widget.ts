// The anywidget ES module: render({model, el}) for PlanBrowser (packed, selected, query) and DebuggerWidget
// (packed, state), with the messages of payload.md. `packed` is the payload as version 2 with a binary body (an
// ipywidgets buffer: the comm carries the gzip bytes, 0.1 MiB for the 30-layer MLP's Plan where its version-1 JSON
// is 1.4 MiB); a model with no `packed` (an older flowlab, a test's own AnyWidget) draws its version-1 `payload`.
import { button, h } from "./dom.js";
import { DebuggerView, type DebugState } from "./debugger.js";
import { type DebugUpdate, StateStore } from "./debugstate.js";
import { type Parsed, readPayload } from "./payload.js";
import { VIEW_EVENT, type ViewChange } from "./saved.js";
import { ensureStyle } from "./style.js";
import { type Rendered, renderParsed, showProblem } from "./views.js";

export interface Model {
  get(name: string): unknown;
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, cb: (...args: unknown[]) => void): void;
  off(event?: string, cb?: (...args: unknown[]) => void): void;
  send(msg: unknown): void;
}

/** The model's payload, decoded: `packed` where the kernel sent it, else the version-1 `payload` trait. */
function modelPayload(model: Model): Promise<Parsed> {
  const packed = model.get("packed");
  const hasPacked = typeof packed === "object" && packed !== null && Object.keys(packed).length > 0;
  return readPayload(hasPacked ? packed : model.get("payload"));
}

/** Calls `apply` with the model's decoded payload on each change; a decode that a newer change overtook is dropped,
 * and none applies after `stop` (the view was closed while a payload decoded). */
function onPayload(model: Model, apply: (parsed: Parsed) => void): { stop(): void } {
  let calls = 0, stopped = false;
  const update = (): void => {
    const call = ++calls;
    void modelPayload(model).then((parsed) => { if (call === calls && !stopped) apply(parsed); });
  };
  model.on("change:packed", update);
  model.on("change:payload", update);
  update();
  return { stop() { stopped = true; model.off("change:packed", update); model.off("change:payload", update); } };
}

/** The view switch: every view the kernel offers (all jobs, each job kind, the Plan); the kernel draws the chosen one. */
function viewSwitch(model: Model): { el: HTMLSelectElement; sync(): void } {
  const select = h("select", "fl-view-switch");
  select.title = "which stage to show: every job, one kind of job, the Plan, or a call's Schedule on it";
  const label = (v: string): string => v === "plan" ? "Plan" : v === "schedule" ? "Schedule" : v === "jobs" ? "all jobs"
    : `${v.replace("_", "-")} jobs`;
  const sync = (): void => {
    const views = model.get("views"), current = model.get("view");
    const list = Array.isArray(views) ? views.filter((v): v is string => typeof v === "string") : [];
    select.replaceChildren(...list.map((v) => { const o = h("option", "", label(v)); o.value = v; return o; }));
    if (typeof current === "string") select.value = current;
    select.style.display = list.length > 1 ? "" : "none";
  };
  select.addEventListener("change", () => model.send({ type: "show", view: select.value }));
  sync();
  return { el: select, sync };
}

function renderBrowser(model: Model, el: HTMLElement): () => void {
  let view: Rendered | null = null;
  const views = viewSwitch(model);
  const debug = button("debug", "open or close the step debugger for this Plan", () => model.send({ type: "debug" }));
  // The button is a toggle (PlanBrowser.debug): say which way it goes; no button where there is no call to debug.
  const onDebugState = (): void => {
    const open = model.get("debug_open") === true;
    debug.textContent = open ? "close debugger" : "debug";
    debug.title = open ? "close the step debugger below" : "open the step debugger for this cell's last job call";
    debug.style.display = model.get("can_debug") === false ? "none" : "";
  };
  onDebugState();
  const draw = (parsed: Parsed): void => {
    view?.destroy();
    view = renderParsed(el, parsed, undefined, {
      tools: [views.el, debug],
      onSelect: (id) => {
        model.set("selected", id ?? "");
        model.save_changes();
        model.send({ type: "select", id });
      },
      onQuery: (q) => { model.set("query", q); model.save_changes(); },
    });
    const g = view.graph;
    if (g) {
      const q = model.get("query");
      if (typeof q === "string" && q) g.setQuery(q);
      const sel = model.get("selected");
      if (typeof sel === "string" && sel) void g.ready.then(() => g.focus(sel));
    }
    views.sync();
    // tell whatever hosts this widget (flowlab's JupyterLab renderer) which view it draws, so that the saved output
    // keeps it (output.ts); nothing listens elsewhere
    const change: ViewChange = { view: String(model.get("view") ?? ""), packed: model.get("packed") };
    const Custom = el.ownerDocument.defaultView?.CustomEvent ?? CustomEvent;  // the page's own (a test's jsdom too)
    el.dispatchEvent(new Custom(VIEW_EVENT, { bubbles: true, detail: change }));
  };
  const onQuery = (): void => { const q = model.get("query"); view?.graph?.setQuery(typeof q === "string" ? q : ""); };
  const onSelected = (): void => {
    const sel = model.get("selected");
    if (view?.graph && typeof sel === "string" && sel !== view.graph.selected) void view.graph.focus(sel);
  };
  const onMsg = (...args: unknown[]): void => {
    const msg = args[0] as { type?: string; id?: string } | null;
    if (msg?.type === "focus" && typeof msg.id === "string") void view?.graph?.focus(msg.id);
  };
  model.on("change:debug_open", onDebugState);
  model.on("change:can_debug", onDebugState);
  model.on("change:views", views.sync);
  model.on("change:query", onQuery);
  model.on("change:selected", onSelected);
  model.on("msg:custom", onMsg);
  const payload = onPayload(model, draw);
  return () => {
    payload.stop();
    view?.destroy();
    model.off("change:debug_open", onDebugState);
    model.off("change:can_debug", onDebugState);
    model.off("change:views", views.sync);
    model.off("change:query", onQuery);
    model.off("change:selected", onSelected);
    model.off("msg:custom", onMsg);
  };
}

function renderDebugger(model: Model, el: HTMLElement): () => void {
  el.classList.add("fl-root");
  el.replaceChildren();
  const view = new DebuggerView((msg) => model.send(msg));
  el.append(view.root);
  const drawPayload = (parsed: Parsed): void => {
    if (parsed.ok) view.setGraph(parsed.payload.graph, parsed.payload.kind === "plan" ? parsed.payload.stuck : undefined);
    else showProblem(view.root, parsed.message);
  };
  // The kernel sends `update` (the change since its last update); a page that sets a whole `state` (the test harness,
  // a saved state) is drawn as it is.
  const store = new StateStore();
  const drawUpdate = (): void => {
    const u = model.get("update") as DebugUpdate | undefined;
    if (u === undefined || u === null) return;
    if (store.apply(u)) view.setState(store.state);
    else {
      if (store.seq === null) view.setState({});  // says it waits for the kernel's whole state
      if (store.shouldResync()) model.send({ type: "resync" });
    }
  };
  const drawState = (): void => {
    const st = model.get("state") as DebugState | undefined;
    if (st !== undefined || model.get("update") === undefined) view.setState(st ?? {});
  };
  const onMsg = (...args: unknown[]): void => view.receive(args[0] as Parameters<DebuggerView["receive"]>[0]);
  model.on("change:update", drawUpdate);
  model.on("change:state", drawState);
  model.on("msg:custom", onMsg);
  const payload = onPayload(model, drawPayload);
  drawState();
  drawUpdate();
  return () => {
    payload.stop();
    view.graph?.destroy();
    model.off("change:update", drawUpdate);
    model.off("change:state", drawState);
    model.off("msg:custom", onMsg);
  };
}

// Only the default export names render: anywidget takes a module-level `render` export as the legacy form and logs a
// deprecation warning in JupyterLab's console for it.
function render({ model, el }: { model: Model; el: HTMLElement }): () => void {
  ensureStyle(el.ownerDocument);
  // The debugger is the widget that has an `update` trait (or, drawn from a saved whole state, a `state` one).
  return model.get("update") !== undefined || model.get("state") !== undefined ? renderDebugger(model, el) : renderBrowser(model, el);
}

export default { render };

// For producers' tests: the same parser the views use (node: `import("flowlab_widget.js")`, no DOM needed).
export { parsePayload, PAYLOAD_VERSION, readPayload } from "./payload.js";
// For the kernel's tests: the debugger's state kept from its updates, as the widget keeps it.
export { StateStore } from "./debugstate.js";
// For pages with no kernel and no JupyterLab (nbconvert's flowlab_html export): draw one payload into an element
// (renderStored: as a notebook stores it, version 2 decoded first).
export { renderPayload, renderStored } from "./views.js";
