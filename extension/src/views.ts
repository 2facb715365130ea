// One entry for every front end: draw a payload (or say plainly why it cannot be drawn) into an element.
import { CompareView } from "./compare.js";
import { h, kvTable } from "./dom.js";
import { graphExportButtons } from "./exports.js";
import { GraphView, type GraphViewOptions } from "./graphview.js";
import { attachOverlay } from "./overlay.js";
import { type Parsed, parsePayload, type Payload, readPayload } from "./payload.js";
import { attachProvenance } from "./provenance.js";
import { RewritesView } from "./rewrites.js";
import { RunView } from "./runview.js";
import { attachSchedule } from "./schedview.js";
import { attachStuck } from "./stuck.js";
import { ensureStyle } from "./style.js";

const SUMMARY_ORDER = ["tasks", "regsts", "mem_blocks"];

export interface Rendered { payload: Payload | null; graph: GraphView | null; run: RunView | null; destroy(): void }

export function showProblem(el: HTMLElement, message: string, fallback?: string): void {
  el.append(h("div", "fl-error", message));
  if (fallback) el.append(h("div", "fl-fallback", fallback));
}

/** Draw a payload already in memory (version 1, or a decoded version 2: the live widget's trait). */
export function renderPayload(el: HTMLElement, data: unknown, fallback?: string, opts: GraphViewOptions = {}): Rendered {
  return renderParsed(el, parsePayload(data), fallback, opts);
}

/** Draw a payload as a notebook or an export stores it (version 1, or version 2 to decode first). */
export async function renderStored(el: HTMLElement, data: unknown, fallback?: string, opts: GraphViewOptions = {}): Promise<Rendered> {
  return renderParsed(el, await readPayload(data), fallback, opts);
}

/** Draw what parsePayload/readPayload gave: the payload, or why it cannot be drawn. */
export function renderParsed(el: HTMLElement, parsed: Parsed, fallback?: string, opts: GraphViewOptions = {}): Rendered {
  ensureStyle(el.ownerDocument);
  el.classList.add("fl-root");
  el.replaceChildren();
  if (!parsed.ok) {
    showProblem(el, parsed.message, fallback);
    return { payload: null, graph: null, run: null, destroy() {} };
  }
  const p = parsed.payload;
  el.append(h("div", "fl-title", p.title));
  if (p.kind === "compare") {
    const cmp = new CompareView(p, opts.height);
    el.append(cmp.root);
    return { payload: p, graph: cmp.right, run: null, destroy: () => cmp.destroy() };
  }
  if (p.kind === "rewrites") {
    const rw = new RewritesView(p, opts.height);
    el.append(rw.root);
    return { payload: p, graph: null, run: null, destroy: () => rw.destroy() };
  }
  if (p.kind === "run") {
    const run = new RunView(p);
    el.append(run.root);
    return { payload: p, graph: run.graph, run, destroy: () => run.graph.destroy() };
  }
  let graph: GraphView | null = null;
  const tools = [...(opts.tools ?? []), ...graphExportButtons(() => graph?.root, p.title || p.kind)];
  // sections drawn on the graph, each wrapping the options before it: numbers (overlay.ts), a hang (stuck.ts), the
  // rewrite that made each task (provenance.ts), a captured call's Schedule (schedview.ts)
  const plan = p.kind === "plan" ? p : null;
  const attached = [p.overlay ? (o: GraphViewOptions) => attachOverlay(p.overlay!, p.graph, o) : null,
    plan?.stuck ? (o: GraphViewOptions) => attachStuck(plan.stuck!, o) : null,
    plan?.provenance ? (o: GraphViewOptions) => attachProvenance(plan.provenance!, o) : null,
    plan?.schedule ? (o: GraphViewOptions) => attachSchedule(plan.schedule!, o) : null]
    .filter((f) => f !== null).reduce<{ opts: GraphViewOptions; mounts: ((v: GraphView, e: HTMLElement) => void)[] }>(
      (acc, f) => { const a = f(acc.opts); return { opts: a.opts, mounts: [...acc.mounts, a.mount] }; }, { opts, mounts: [] });
  graph = new GraphView(p.graph, { ...attached.opts, tools });
  el.append(graph.root);
  for (const mount of attached.mounts) mount(graph, el);
  if (p.kind === "plan" && Object.keys(p.summary).length) {
    // in flowlab's order: a saved notebook's JSON has its keys sorted (nbformat writes them so)
    const rank = (k: string): number => { const i = SUMMARY_ORDER.indexOf(k); return i < 0 ? SUMMARY_ORDER.length : i; };
    const rows = Object.entries(p.summary).sort(([a], [b]) => rank(a) - rank(b));
    el.append(h("div", "fl-muted", rows.map(([k, v]) => `${v} ${k.replace("_", " ")}`).join(" · ")));
  }
  if (p.kind === "jobset" && Object.keys(p.shared_interfaces).length) {
    // A model's variables are shared by four jobs each: a long list, so it starts folded past a few rows.
    const rows = Object.entries(p.shared_interfaces);
    const box = h("details", "fl-panel");
    box.open = rows.length <= 6;
    box.append(h("summary", "", `${rows.length} interfaces shared between jobs (drawn as edges through their memory blocks)`),
      kvTable(rows.map(([k, jobs]) => [k, jobs.join(" → ")])));
    el.append(box);
  }
  return { payload: p, graph, run: null, destroy: () => graph.destroy() };
}
