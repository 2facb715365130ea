// Numbers on the graph (issue 27 §3): a payload's optional `overlay` section (flowlab/viz/payload_overlay.py) colours
// the boxes by one number per node (a gradient, threshold bins or categories), with a legend in the toolbar, the
// value in a node's detail pane, a group's statistics (count, min, median, max, sum) in the group's, and a sortable
// list of the top nodes and of the groups under the graph. A collapsed group's box takes its greatest value's colour,
// so a hot spot is never hidden inside a group.
import { button, fmt, h } from "./dom.js";
import type { GraphView, GraphViewOptions } from "./graphview.js";
import type { Graph } from "./payload.js";

export interface GroupStats { count: number; min?: number; median?: number; max?: number; sum?: number }
export interface OverlayData {
  metric: string; unit: string; view: string; scale: "gradient" | "thresholds" | "categories";
  values: Record<string, number>; colors: string[]; thresholds: number[]; categories: string[];
  min?: number; max?: number; groups: Record<string, GroupStats>; source?: string;
  labels: Record<string, string>;  // node id -> a name that says where ("job/task"), for the lists
}

/** The section as the payload has it; throws an Error naming what is wrong (parsePayload turns it into a message). */
export function parseOverlay(raw: unknown, at = "payload.overlay"): OverlayData {
  const o = raw as Record<string, unknown>;
  if (typeof o !== "object" || o === null || Array.isArray(o)) throw new Error(`${at}: expected an object`);
  const scale = o.scale;
  if (scale !== "gradient" && scale !== "thresholds" && scale !== "categories") {
    throw new Error(`${at}.scale: expected gradient, thresholds or categories, got ${JSON.stringify(scale)}`);
  }
  const values = (o.values ?? {}) as Record<string, number>;
  for (const [k, v] of Object.entries(values)) if (typeof v !== "number") throw new Error(`${at}.values.${k}: expected a number`);
  const colors = Array.isArray(o.colors) ? o.colors.map(String) : [];
  if (!colors.length) throw new Error(`${at}.colors: expected a list of colours`);
  const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
  return {
    metric: String(o.metric ?? "value"), unit: String(o.unit ?? ""), view: String(o.view ?? ""), scale, values, colors,
    thresholds: Array.isArray(o.thresholds) ? o.thresholds.map(Number) : [],
    categories: Array.isArray(o.categories) ? o.categories.map(String) : [],
    min: num(o.min), max: num(o.max), groups: (o.groups ?? {}) as Record<string, GroupStats>,
    source: typeof o.source === "string" ? o.source : undefined,
    labels: (o.labels ?? {}) as Record<string, string>,
  };
}

/** A value's colour index: its category, or its threshold bin (how many edges are <= it); the gradient has none. */
export function binOf(ov: OverlayData, v: number): number {
  if (ov.scale === "categories") return Math.round(v);
  return ov.thresholds.filter((t) => v >= t).length;
}

const rgb = (c: string): number[] => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
const hex = (p: number[]): string => `#${p.map((x) => Math.round(x).toString(16).padStart(2, "0")).join("")}`;

/** The fill of a value: its bin's colour, or on a gradient the colour at its place between min and max. */
export function colorOf(ov: OverlayData, v: number): string {
  if (ov.scale !== "gradient") return ov.colors[Math.min(binOf(ov, v), ov.colors.length - 1)];
  const lo = ov.min ?? v, hi = ov.max ?? v;
  const t = hi > lo ? Math.min(1, Math.max(0, (v - lo) / (hi - lo))) : 0;
  const at = t * (ov.colors.length - 1), i = Math.min(Math.floor(at), ov.colors.length - 2);
  if (i < 0) return ov.colors[0];
  const a = rgb(ov.colors[i]), b = rgb(ov.colors[i + 1]), f = at - i;
  return hex(a.map((x, k) => x + (b[k] - x) * f));
}

/** A value as people read it: its category, or the number and the unit. */
export function valueText(ov: OverlayData, v: number | undefined): string {
  if (v === undefined) return "—";
  if (ov.scale === "categories") return ov.categories[Math.round(v)] ?? String(v);
  return `${fmt(v)}${ov.unit ? ` ${ov.unit}` : ""}`;
}

function binLabels(ov: OverlayData): string[] {
  if (ov.scale === "categories") return ov.categories.slice();
  const t = ov.thresholds, u = (v: number): string => valueText(ov, v);
  return ov.colors.map((_, i) => (i === 0 ? `< ${u(t[0])}` : i === t.length ? `≥ ${u(t[i - 1])}` : `${u(t[i - 1])} – ${u(t[i])}`));
}

/** The legend: the metric and its unit, then a swatch per bin or category, or the gradient bar from min to max. */
export function overlayLegend(ov: OverlayData): HTMLElement {
  const legend = h("span", "fl-ov-legend");
  legend.title = `overlay: ${ov.metric}${ov.source ? ` (${ov.source})` : ""}`;
  legend.append(h("span", "fl-ov-metric", `${ov.metric}${ov.unit ? ` (${ov.unit})` : ""}:`));
  if (ov.scale === "gradient") {
    const bar = h("span", "fl-ov-bar");
    bar.style.background = `linear-gradient(to right, ${ov.colors.join(", ")})`;
    legend.append(h("span", "fl-ov-min", valueText(ov, ov.min)), bar, h("span", "fl-ov-max", valueText(ov, ov.max)));
    return legend;
  }
  binLabels(ov).forEach((label, i) => {
    const chip = h("span", "fl-lane-chip fl-ov-chip");
    const sw = h("span", "fl-swatch fl-ov-swatch");
    sw.style.background = ov.colors[i];
    sw.dataset.bin = String(i);
    chip.append(sw, h("span", "", label));
    legend.append(chip);
  });
  legend.append(h("span", "fl-muted", `min ${valueText(ov, ov.min)} · max ${valueText(ov, ov.max)}`));
  return legend;
}

/** Fill the drawn boxes (node id -> its <g>): a node by its value, a collapsed group by its greatest. */
export function paintOverlay(ov: OverlayData, els: Map<string, SVGGElement>): void {
  for (const [id, g] of els) {
    const v = ov.values[id] ?? (ov.scale === "categories" ? undefined : ov.groups[id]?.max);
    const shape = g.querySelector<SVGElement>(".fl-shape");
    if (!shape || v === undefined) continue;
    shape.style.fill = colorOf(ov, v);
    g.dataset.overlay = String(v);
    const title = g.querySelector("title");
    if (title && !title.textContent?.includes(ov.metric)) {
      title.textContent += `\n${ov.metric}: ${valueText(ov, v)}${ov.values[id] === undefined ? " (greatest inside)" : ""}`;
    }
  }
}

function statRows(ov: OverlayData, st: GroupStats): [string, string][] {
  return [["count", String(st.count)], ["min", valueText(ov, st.min)], ["median", valueText(ov, st.median)],
    ["max", valueText(ov, st.max)], ["sum", valueText(ov, st.sum)]];
}

function kv(rows: [string, string][]): HTMLTableElement {
  const t = h("table", "fl-kv fl-ov-kv");
  for (const [k, v] of rows) { const tr = h("tr"); tr.append(h("th", "", k), h("td", "", v)); t.append(tr); }
  return t;
}

/** Add the overlay's part to a detail pane just filled for `id`: a node's value and rank, a group's statistics. */
export function overlayDetail(ov: OverlayData, pane: HTMLElement, id: string | null): void {
  if (!id) return;
  const v = ov.values[id], st = ov.groups[id];
  if (v === undefined && !st) return;
  pane.append(h("div", "fl-detail-section", `overlay: ${ov.metric}`));
  if (v !== undefined) {
    const rows: [string, string][] = [["value", valueText(ov, v)]];
    if (ov.scale !== "categories") {
      const n = Object.values(ov.values).filter((x) => x > v).length;
      rows.push(["rank", `${n + 1} of ${Object.keys(ov.values).length}`]);
    }
    pane.append(kv(rows));
  } else if (st) pane.append(kv(ov.scale === "categories" ? [["nodes", String(st.count)]] : statRows(ov, st)));
}

type Col<T> = [string, (r: T) => string, (r: T) => number | string];

/** A table sorted by a column (click its header; again reverses); a row click goes to its node or group. */
function sortable<T extends { id: string }>(rows: T[], cols: Col<T>[], go: (id: string) => void, limit: number, by = 1): HTMLElement {
  const wrap = h("div", "fl-table-wrap fl-ov-table");
  let col = by, desc = true;
  const draw = (): void => {
    const key = cols[col][2];
    const sorted = rows.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return desc ? -c : c;
    }).slice(0, limit);
    const t = h("table", "fl-actors");
    const head = h("tr");
    cols.forEach(([name], i) => {
      const th = h("th", "", `${name}${i === col ? (desc ? " ▼" : " ▲") : ""}`);
      th.title = "sort by this column (again: the other way)";
      th.addEventListener("click", () => { desc = i === col ? !desc : true; col = i; draw(); });
      head.append(th);
    });
    t.append(head);
    for (const r of sorted) {
      const tr = h("tr");
      tr.dataset.id = r.id;
      tr.style.cursor = "pointer";
      tr.addEventListener("click", () => go(r.id));
      for (const [, text] of cols) tr.append(h("td", "", text(r)));
      t.append(tr);
    }
    wrap.replaceChildren(t);
  };
  draw();
  return wrap;
}

/** Under the graph: the top nodes (sortable, `n` rows) and every group's statistics (sortable). */
export function overlayPanel(ov: OverlayData, graph: Graph, go: (id: string) => void, n = 15): HTMLElement {
  const box = h("details", "fl-panel fl-ov-panel");
  box.open = true;
  // a node by its overlay label (job/task) where it has one; a group by its path ("deep_train (user) / fc3"), since
  // every job has a "System" scope
  const groupOf = new Map(graph.groups.map((g) => [g.id, g]));
  const path = (id: string | null): string[] => {
    const g = id ? groupOf.get(id) : undefined;
    return g ? [...path(g.parent), g.label] : [];
  };
  const label = new Map<string, string>([...graph.nodes.map((x) => [x.id, ov.labels[x.id] ?? x.label] as [string, string]),
    ...graph.groups.map((g) => [g.id, path(g.id).join(" / ")] as [string, string])]);
  const nodes = Object.entries(ov.values).map(([id, v]) => ({ id, v }));
  box.append(h("summary", "", `${ov.metric}: ${nodes.length} nodes${ov.source ? ` · ${ov.source}` : ""}`));
  const name = (r: { id: string }): string => label.get(r.id) ?? r.id;
  box.append(h("h4", "", `top ${Math.min(n, nodes.length)} nodes`), sortable(nodes, [
    ["node", name, name], [ov.metric, (r) => valueText(ov, r.v), (r) => r.v]], go, n));
  if (ov.scale !== "categories") {
    const groups = Object.entries(ov.groups).map(([id, st]) => ({ id, ...st }));
    const stat = (k: keyof GroupStats): Col<GroupStats & { id: string }> =>
      [k, (r) => (k === "count" ? String(r.count) : valueText(ov, r[k])), (r) => r[k] ?? 0];
    box.append(h("h4", "", `groups (${groups.length}): statistics over every node inside`),
      sortable(groups, [["group", name, name], stat("count"), stat("min"), stat("median"), stat("max"), stat("sum")], go, 200, 5));
  }
  return box;
}

/**
 * Wire an overlay into a graph view: `opts` adds the hooks to the view's options (paint after every draw, the detail
 * pane's part whenever it is filled); `mount` puts the legend in the view's toolbar and the panel under it.
 */
export function attachOverlay(ov: OverlayData, graph: Graph, opts: GraphViewOptions): {
  opts: GraphViewOptions; mount: (view: GraphView, el: HTMLElement) => void;
} {
  let drawn = new Map<string, SVGGElement>(), on = true;
  const paint = (): void => {
    if (on) paintOverlay(ov, drawn);
    else for (const g of drawn.values()) g.querySelector<SVGElement>(".fl-shape")?.style.removeProperty("fill");
  };
  return {
    opts: {
      ...opts,
      onDraw: (els) => { drawn = els; paint(); opts.onDraw?.(els); },
      onDetail: (pane, id) => { overlayDetail(ov, pane, id); opts.onDetail?.(pane, id); },
    },
    mount: (v, el) => {
      ensureOverlayStyle(el.ownerDocument);
      const toggle = button("colours", "draw the boxes without the overlay's colours (again: with them)", () => { on = !on; paint(); });
      v.toolbar.append(overlayLegend(ov), toggle);
      el.append(overlayPanel(ov, graph, (id) => void v.focus(id)));
    },
  };
}

const CSS = `
.fl-ov-legend{display:inline-flex;flex-wrap:wrap;gap:6px;align-items:center;margin-left:8px;font-size:12px;color:var(--fl-fg)}
.fl-ov-metric{font-weight:600}
.fl-ov-bar{display:inline-block;width:120px;height:10px;border:1px solid var(--fl-line);border-radius:2px}
.fl-ov-swatch{width:14px;height:14px;border:1px solid var(--fl-line)}
.fl-ov-panel h4{margin:6px 0 2px}
.fl-ov-table{max-height:260px}
`;

export function ensureOverlayStyle(doc: Document = document): void {
  if (doc.getElementById("flowlab-overlay-style")) return;
  const st = doc.createElement("style");
  st.id = "flowlab-overlay-style";
  st.textContent = CSS;
  doc.head.append(st);
}
