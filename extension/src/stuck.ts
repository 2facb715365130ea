// A hang drawn on the Plan (issue 27 §4): a Plan payload's optional `stuck` section (flowlab/viz/payload_sections.py,
// from a WaitGraph) marks every blocked actor by the kind of its wait (in the cycle, a register, a section, a
// machine; those that only wait for input upstream faintly), draws the wait-for edges (actor → what it waits for)
// over the Plan's own edges, opens the groups holding the cycle and fits the view to it. A stuck actor's detail pane
// says what it waits for (the WaitGraph's text for it), with links to those actors; the whole text is under the graph.
import { h, s } from "./dom.js";
import type { GraphView, GraphViewOptions } from "./graphview.js";

export interface StuckActor {
  kind: string; name: string; job: string; machine: number; thread: number; acts: number; holds: boolean;
  text: string; reason: string; waits_on: string[];
}
export interface StuckData {
  text: string; cycle: string[]; actors: Record<string, StuckActor>; edges: [string, string, boolean][];
  kinds: Record<string, string>; counts: Record<string, number>; pending: string[]; silent: string[];
}

export const STUCK_COLORS: Record<string, { fill: string; line: string }> = {
  cycle: { fill: "#f6a8a8", line: "#c62828" },
  register: { fill: "#ffd39b", line: "#d46b00" },
  section: { fill: "#d9c3f0", line: "#7b3fb0" },
  machine: { fill: "#a9cdf2", line: "#1f5fa8" },
  input: { fill: "", line: "#8a8a8a" },
};

/** The section as the payload has it; throws an Error naming what is wrong (parsePayload turns it into a message). */
export function parseStuck(raw: unknown, at = "payload.stuck"): StuckData {
  const o = raw as Record<string, unknown>;
  if (typeof o !== "object" || o === null || Array.isArray(o)) throw new Error(`${at}: expected an object`);
  const actors = (o.actors ?? {}) as Record<string, StuckActor>;
  for (const [k, a] of Object.entries(actors)) {
    if (typeof a !== "object" || a === null || typeof a.kind !== "string") throw new Error(`${at}.actors.${k}: expected an actor with a kind`);
    if (!Array.isArray(a.waits_on)) a.waits_on = [];
  }
  const edges = Array.isArray(o.edges) ? o.edges.filter((e): e is [string, string, boolean] =>
    Array.isArray(e) && typeof e[0] === "string" && typeof e[1] === "string") : [];
  const list = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
  return { text: String(o.text ?? ""), cycle: list(o.cycle), actors, edges, kinds: (o.kinds ?? {}) as Record<string, string>,
    counts: (o.counts ?? {}) as Record<string, number>, pending: list(o.pending), silent: list(o.silent) };
}

/** The legend: a swatch per kind present, with its count. */
function stuckLegend(st: StuckData): HTMLElement {
  const legend = h("span", "fl-stuck-legend");
  legend.append(h("span", "fl-ov-metric", "stuck:"));
  for (const [kind, label] of Object.entries(st.kinds)) {
    const n = st.counts[kind] ?? 0;
    if (!n) continue;
    const chip = h("span", "fl-lane-chip");
    const sw = h("span", `fl-swatch fl-stuck-swatch st-${kind}`);
    sw.dataset.kind = kind;
    chip.append(sw, h("span", "", `${label} (${n})`));
    legend.append(chip);
  }
  return legend;
}

/** Where a segment from the centre of `a` towards `b` leaves `a`'s box. */
function border(a: { x: number; y: number; w: number; h: number }, tx: number, ty: number): [number, number] {
  const cx = a.x + a.w / 2, cy = a.y + a.h / 2, dx = tx - cx, dy = ty - cy;
  const t = Math.min(dx ? a.w / 2 / Math.abs(dx) : Infinity, dy ? a.h / 2 / Math.abs(dy) : Infinity, 1);
  return [cx + dx * t, cy + dy * t];
}

/** Draw the wait-for edges between the drawn boxes (a hidden actor's edge starts at the group box that holds it). */
function drawWaits(st: StuckData, view: GraphView, els: Map<string, SVGGElement>): void {
  const first = els.values().next().value as SVGGElement | undefined;
  const nodesLayer = first?.parentNode as SVGGElement | null | undefined;
  const viewport = nodesLayer?.parentNode as SVGGElement | null | undefined;
  if (!nodesLayer || !viewport || !view.layout) return;
  viewport.querySelector(".fl-wait-edges")?.remove();
  const layer = s("g", { class: "fl-wait-edges" });
  const defs = s("defs");
  for (const [id, color] of [["fl-arrow-wait", "#d46b00"], ["fl-arrow-wait-cycle", "#c62828"]]) {
    const m = s("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 10, markerHeight: 10, markerUnits: "userSpaceOnUse", orient: "auto" });
    m.append(s("path", { d: "M0,0 L10,5 L0,10 z", fill: color }));
    defs.append(m);
  }
  layer.append(defs);
  const seen = new Set<string>();
  for (const [src, dst, cyc] of st.edges) {
    const a = view.tree.representative(src), b = view.tree.representative(dst);
    const ba = view.layout.nodes.get(a), bb = view.layout.nodes.get(b);
    if (!ba || !bb || a === b || seen.has(`${a} ${b}`)) continue;
    seen.add(`${a} ${b}`);
    const faint = st.actors[src]?.kind === "input";
    const [x0, y0] = border(ba, bb.x + bb.w / 2, bb.y + bb.h / 2), [x1, y1] = border(bb, ba.x + ba.w / 2, ba.y + ba.h / 2);
    // bend to the left of the direction, so that a → b and b → a (a two-actor cycle) are two arcs, not one line
    const mx = (x0 + x1) / 2, my = (y0 + y1) / 2, len = Math.hypot(x1 - x0, y1 - y0) || 1, bend = Math.min(40, len / 3);
    const cx = mx - ((y1 - y0) / len) * bend, cy = my + ((x1 - x0) / len) * bend;
    const g = s("g", { class: `fl-wait-edge${cyc ? " cycle" : ""}${faint ? " faint" : ""}`, "data-source": src, "data-target": dst });
    g.append(s("title", {}, `${st.actors[src]?.name ?? src} waits for ${st.actors[dst]?.name ?? dst}`),
      s("path", { d: `M${x0.toFixed(1)},${y0.toFixed(1)} Q${cx.toFixed(1)},${cy.toFixed(1)} ${x1.toFixed(1)},${y1.toFixed(1)}`,
        "marker-end": `url(#${cyc ? "fl-arrow-wait-cycle" : "fl-arrow-wait"})` }));
    layer.append(g);
  }
  viewport.insertBefore(layer, nodesLayer);
}

/** A stuck actor's part of its detail pane: what it waits for, linked. */
function stuckDetail(st: StuckData, pane: HTMLElement, id: string | null, go: (id: string) => void): void {
  const a = id ? st.actors[id] : undefined;
  if (!a) return;
  // first after the title and the box's facts: what a person opening a stuck actor came to read
  const part = h("div", "fl-stuck-detail");
  part.append(h("div", "fl-detail-section", `stuck: ${st.kinds[a.kind] ?? a.kind}`), h("div", "fl-stuck-reason", a.text));
  if (a.waits_on.length) {
    const line = h("div", "fl-stuck-waits", "waits for: ");
    a.waits_on.forEach((w, i) => {
      const link = h("a", "fl-link", st.actors[w]?.name ?? w);
      link.href = "#";
      link.addEventListener("click", (ev) => { ev.preventDefault(); go(w); });
      line.append(...(i ? [", "] : []), link);
    });
    part.append(line);
  }
  pane.insertBefore(part, pane.children[2] ?? null);
}

/** Wire a hang into a Plan view (as overlay.ts wires an overlay): marks and edges after every draw, the detail
 * pane's part, the legend, the text under the graph, and a first view on the cycle (or the stuck actors). */
export function attachStuck(st: StuckData, opts: GraphViewOptions): {
  opts: GraphViewOptions; mount: (view: GraphView, el: HTMLElement) => void;
} {
  let view: GraphView | null = null;
  let drawn = new Map<string, SVGGElement>();
  return {
    opts: {
      ...opts,
      onDraw: (els) => { drawn = els; if (view) drawWaits(st, view, els); opts.onDraw?.(els); },
      onDetail: (pane, id) => { if (view) stuckDetail(st, pane, id, (w) => void view?.focus(w)); opts.onDetail?.(pane, id); },
    },
    mount: (v, el) => {
      view = v;
      ensureStuckStyle(el.ownerDocument);
      for (const kind of Object.keys(st.kinds)) {
        v.mark(`st-${kind}`, Object.entries(st.actors).filter(([, a]) => a.kind === kind).map(([id]) => id));
      }
      v.toolbar.append(stuckLegend(st));
      const panel = h("details", "fl-panel fl-stuck-panel");
      panel.open = true;
      const lines = st.text.split("\n");
      const head = lines.find((l) => l.startsWith("deadlock") || l.startsWith("no cycle")) ?? lines[0] ?? "";
      panel.append(h("summary", "fl-stuck-head", head), h("pre", "fl-stuck-text", st.text));
      el.append(panel);
      const focus = st.cycle.length ? st.cycle : Object.entries(st.actors).filter(([, a]) => a.kind !== "input").map(([id]) => id);
      void v.ready.then(async () => {
        if (drawn.size) drawWaits(st, v, drawn);
        if (focus.length) await v.fitTo(focus);
        v.root.dataset.stuck = "ready";
      });
    },
  };
}

const CSS = `
.fl-stuck-legend{display:inline-flex;flex-wrap:wrap;gap:6px;align-items:center;margin-left:8px;font-size:12px;color:var(--fl-fg)}
.fl-stuck-swatch{width:14px;height:14px;border:2px solid var(--fl-line)}
${Object.entries(STUCK_COLORS).map(([k, c]) => `.fl-stuck-swatch.st-${k}{background:${c.fill || "transparent"};border-color:${c.line}${c.fill ? "" : ";border-style:dashed"}}
.fl-node.st-${k} .fl-shape{${c.fill ? `fill:${c.fill};` : ""}stroke:${c.line};stroke-width:${c.fill ? 3 : 2}px${c.fill ? "" : ";stroke-dasharray:5 3"}}
${c.fill ? `.fl-node.st-${k} .fl-label,.fl-node.st-${k} .fl-type{fill:#1a1a1a}` : ""}`).join("\n")}
.fl-wait-edge path{fill:none;stroke:#d46b00;stroke-width:2.5px}
.fl-wait-edge.cycle path{stroke:#c62828;stroke-width:3.5px}
.fl-wait-edge.faint path{stroke-opacity:.45;stroke-width:1.5px;stroke-dasharray:6 4}
.fl-stuck-reason{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap;margin:2px 0;color:var(--fl-fg)}
.fl-stuck-waits{font-size:12px;margin:2px 0 6px;color:var(--fl-fg)}
.fl-stuck-head{font-weight:600;color:var(--fl-err-fg)}
.fl-stuck-text{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;max-height:240px;overflow:auto;white-space:pre;color:var(--fl-fg);margin:4px 0}
`;

function ensureStuckStyle(doc: Document = document): void {
  if (doc.getElementById("flowlab-stuck-style")) return;
  const style = doc.createElement("style");
  style.id = "flowlab-stuck-style";
  style.textContent = CSS;
  doc.head.append(style);
}
