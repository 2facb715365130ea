// Drawing one layout as SVG: clusters, edges (with shape/dtype labels), nodes and collapsed-group boxes.
import { s } from "./dom.js";
import { subText } from "./subtext.js";
import { headerText, type Layout, type NodeBox } from "./layout.js";

// tab10, then its light partners (tab20), so up to 20 lanes (a 14-thread seed Plan) never share a colour
export const LANE_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
  "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"];

function clip(text: string, width: number, charW = 6.6): string {
  const n = Math.max(3, Math.floor((width - 14) / charW));
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

export function defs(): SVGDefsElement {
  const d = s("defs");
  for (const [id, color] of [["fl-arrow", "#555"], ["fl-arrow-ctrl", "#999"], ["fl-arrow-mem", "#8e44ad"]]) {
    const m = s("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
    m.append(s("path", { d: "M0,0 L10,5 L0,10 z", fill: color }));
    d.append(m);
  }
  return d;
}

function nodeEl(b: NodeBox, lanes: string[]): SVGGElement {
  const n = b.node;
  const kind = n.kind === "group" ? "fl-group-box" : `kind-${n.kind}`;
  const g = s("g", { class: `fl-node ${kind}`, "data-id": n.id, transform: `translate(${b.x},${b.y})` });
  for (const c of n.node?.classes ?? []) if (/^[A-Za-z0-9_-]+$/.test(c)) g.classList.add(`c-${c}`);
  const title = s("title");
  if (n.kind === "group") {
    title.textContent = `${n.label}: ${n.count} nodes (click to expand)`;
    g.append(title, s("rect", { class: "fl-shape", width: b.w, height: b.h, rx: 6 }),
      s("rect", { class: "fl-shape-inner", x: 3, y: 3, width: b.w - 6, height: b.h - 6, rx: 4 }),
      s("text", { class: "fl-label", x: b.w / 2, y: 18 }, clip(n.label, b.w - 14)),
      s("text", { class: "fl-type", x: b.w / 2, y: 33 }, `+ ${n.count} nodes`));
    return g;
  }
  const gn = n.node!;
  const sub = subText(gn);
  title.textContent = [gn.label, gn.type, gn.device, gn.sbp && `sbp ${gn.sbp}`, gn.note, gn.lane].filter(Boolean).join("\n");
  const rx = gn.kind === "memblock" ? 12 : gn.kind === "interface" ? 16 : 3;
  g.append(title, s("rect", { class: "fl-shape", width: b.w, height: b.h, rx }));
  const lane = gn.lane ? lanes.indexOf(gn.lane) : -1;
  if (lanes.length > 1 && lane >= 0) {
    g.append(s("rect", { class: "fl-lane", x: 0, y: 0, width: 5, height: b.h, fill: LANE_COLORS[lane % LANE_COLORS.length] }));
  }
  g.append(s("text", { class: "fl-label", x: b.w / 2, y: sub ? 15 : 21 }, clip(gn.label, b.w)));
  if (sub) g.append(s("text", { class: "fl-type", x: b.w / 2, y: 28 }, clip(sub, b.w, 5.6)));
  return g;
}

export function drawLayout(layer: SVGGElement, lay: Layout, lanes: string[]): Map<string, SVGGElement> {
  layer.replaceChildren();
  const clusters = s("g", { class: "fl-clusters" }), edges = s("g", { class: "fl-edges" }), nodes = s("g", { class: "fl-nodes" });
  for (const c of lay.clusters) {
    const g = s("g", { class: `fl-cluster depth-${Math.min(c.depth, 3)}`, "data-group": c.id });
    const title = s("title", {}, `${c.label}: ${c.count} nodes (click the header to collapse)`);
    g.append(title, s("rect", { class: "fl-cluster-box", x: c.x, y: c.y, width: c.w, height: c.h, rx: 6 }),
      s("rect", { class: "fl-cluster-head", x: c.x, y: c.y, width: c.w, height: 18, rx: 6 }),
      s("text", { class: "fl-cluster-label", x: c.x + 8, y: c.y + 13 }, headerText(c.label, c.count, c.w)));
    clusters.append(g);
  }
  // an aggregated edge's id joins its ends with NUL, which an SVG file (the export buttons) cannot hold
  for (const p of lay.edges) {
    if (p.points.length < 2) continue;
    const e = p.edge;
    const d = `M${p.points.map((q) => `${q.x.toFixed(1)},${q.y.toFixed(1)}`).join(" L")}`;
    const marker = e.kind === "ctrl" ? "fl-arrow-ctrl" : e.kind === "shared_mem" ? "fl-arrow-mem" : "fl-arrow";
    const g = s("g", { class: `fl-edge kind-${e.kind}${p.aux ? " aux" : ""}`, "data-edge": e.id.replace(/\u0000/g, " "),
      "data-source": e.source, "data-target": e.target });
    const title = s("title", {}, `${e.source} → ${e.target}${e.label ? `: ${e.label}` : ""}${e.count > 1 ? ` (${e.count} edges)` : ""}`);
    g.append(title, s("path", { d, "marker-end": `url(#${marker})`, "stroke-width": e.count > 1 ? Math.min(4, 1 + Math.log2(e.count)) : 1 }));
    if (p.labelAt) g.append(s("text", { class: "fl-edge-label", x: p.labelAt.x, y: p.labelAt.y + 4 }, clip(e.label, 180, 5.6)));
    edges.append(g);
  }
  const byId = new Map<string, SVGGElement>();
  for (const b of lay.nodes.values()) {
    const g = nodeEl(b, lanes);
    byId.set(b.node.id, g);
    nodes.append(g);
  }
  layer.append(clusters, edges, nodes);
  return byId;
}

/** The minimap: every box as a plain rect, and a rect for what the canvas shows. */
export function drawMinimap(svg: SVGSVGElement, lay: Layout): SVGRectElement {
  svg.replaceChildren();
  const b = lay.bounds;
  svg.setAttribute("viewBox", `${b.x} ${b.y} ${Math.max(1, b.w)} ${Math.max(1, b.h)}`);
  for (const c of lay.clusters) svg.append(s("rect", { class: "fl-mm-cluster", x: c.x, y: c.y, width: c.w, height: c.h }));
  for (const n of lay.nodes.values()) svg.append(s("rect", { class: "fl-mm-node", x: n.x, y: n.y, width: n.w, height: n.h, "data-mm": n.node.id }));
  const view = s("rect", { class: "fl-mm-view" });
  svg.append(view);
  return view;
}
