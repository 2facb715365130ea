// Layered layout of the visible graph with dagre (chosen over ELK: see bench/layout.ts and extension/README.md).
import { Graph as DGraph, layout as dagreLayout } from "@dagrejs/dagre";
import { subText } from "./subtext.js";
import type { Visible, VEdge, VNode } from "./visible.js";

export interface Box { x: number; y: number; w: number; h: number }  // x, y: the top-left corner
export interface NodeBox extends Box { node: VNode }
export interface ClusterBox extends Box { id: string; label: string; count: number; depth: number }
export interface EdgePath { edge: VEdge; points: { x: number; y: number }[]; labelAt: { x: number; y: number } | null; aux: boolean }
export interface Layout { nodes: Map<string, NodeBox>; clusters: ClusterBox[]; edges: EdgePath[]; bounds: Box; ms: number }

const CHAR_W = 6.6, NODE_H = 34, GROUP_H = 44, HEADER = 20;

export function nodeSize(n: VNode): { w: number; h: number } {
  const text = n.kind === "group" ? `${n.label} (${n.count})` : n.label;
  const sub = subText(n.node);
  const w = Math.min(280, Math.max(70, Math.max(text.length, sub.length * 0.85) * CHAR_W + 26));
  return { w, h: n.kind === "group" ? GROUP_H : NODE_H };
}

// A group's header ("− job_0 (user) (1000)", 12px bold): the box is made wide enough for it, up to HEAD_MAX_W, past
// which the label (not the count) ends in an ellipsis and the whole name is in the group's tooltip. The width per
// character is a bold sans-serif's upper bound, so the text fits where the font is a little wider than DejaVu's.
const HEAD_CHAR_W = 7.6, HEAD_PAD = 18, HEAD_MAX_W = 420;

export function headerText(label: string, count: number, width = Infinity): string {
  const tail = ` (${count})`;
  const room = Math.floor((width - HEAD_PAD) / HEAD_CHAR_W + 1e-6) - 2 - tail.length;  // 2: "− "
  const text = label.length > room ? `${label.slice(0, Math.max(1, room - 1))}…` : label;
  return `− ${text}${tail}`;
}

export function headerWidth(label: string, count: number): number {
  return Math.min(HEAD_MAX_W, headerText(label, count).length * HEAD_CHAR_W + HEAD_PAD);
}

export function labelSize(text: string): { w: number; h: number } {
  return text ? { w: Math.min(180, text.length * 5.6 + 6), h: 12 } : { w: 0, h: 0 };
}

export const HUB_DEGREE = 8;

/**
 * The edges the layered layout ranks by. Hubs (a tick that controls every op, an optimizer group every layer feeds,
 * a shared-memory group) make dagre's crossing minimisation take minutes on a few hundred boxes and stretch the
 * picture into a fan; as in TensorBoard, their edges are left out of the layout and drawn straight afterwards.
 * Control edges go too once there are many edges per box. What remains is the data flow, which dagre lays out fast.
 */
export function rankedEdges(v: Visible): Set<string> {
  // A data edge's ends are judged by their data edges only: a collapsed layer also has control and shared-memory
  // edges to the job's hubs, which made it a "hub" whose data flow was left out (30 layers drawn as one row).
  const degree = new Map<string, number>(), data = new Map<string, number>();
  for (const e of v.edges) {
    for (const end of [e.source, e.target]) {
      degree.set(end, (degree.get(end) ?? 0) + 1);
      if (e.kind === "data") data.set(end, (data.get(end) ?? 0) + 1);
    }
  }
  const dense = v.edges.length > 1.5 * Math.max(1, v.nodes.length);
  const keep = new Set<string>();
  for (const e of v.edges) {
    const of = e.kind === "data" ? data : degree;
    if ((of.get(e.source) ?? 0) > HUB_DEGREE || (of.get(e.target) ?? 0) > HUB_DEGREE) continue;
    if (dense && e.kind === "ctrl") continue;
    keep.add(e.id);
  }
  return keep;
}

/** A straight edge between the borders of two laid-out boxes. */
function auxEdge(e: VEdge, nodes: Map<string, NodeBox>, ranked = false): EdgePath {
  const a = nodes.get(e.source), b = nodes.get(e.target);
  if (!a || !b) return { edge: e, points: [], labelAt: null, aux: !ranked };
  const ca = { x: a.x + a.w / 2, y: a.y + a.h / 2 }, cb = { x: b.x + b.w / 2, y: b.y + b.h / 2 };
  const border = (c: { x: number; y: number }, box: Box, to: { x: number; y: number }) => {
    const dx = to.x - c.x, dy = to.y - c.y;
    if (!dx && !dy) return c;
    const s = Math.min(Math.abs(box.w / 2 / (dx || 1e-9)), Math.abs(box.h / 2 / (dy || 1e-9)));
    return { x: c.x + dx * Math.min(1, s), y: c.y + dy * Math.min(1, s) };
  };
  return { edge: e, points: [border(ca, a, cb), border(cb, b, ca)], labelAt: null, aux: !ranked };
}

const PACK_MIN = 6, PACK_ASPECT = 1.6, PACK_GAP = 18;

/**
 * Boxes with no edges among them (the tasks of one layer of a big Plan, fed from outside the layer) would be one
 * rank, a row as wide as all of them together: pack them into rows, in their order, about as wide as a canvas is
 * (PACK_ASPECT), so an opened group is shown whole at a readable scale. Sets each node's centre as dagre does.
 */
function packGrid(g: DGraph, members: string[]): void {
  const dims = members.map((m) => g.node(m) as { width: number; height: number; x?: number; y?: number });
  const w = Math.max(...dims.map((d) => d.width)) + PACK_GAP, h = Math.max(...dims.map((d) => d.height)) + PACK_GAP;
  const cols = Math.max(1, Math.min(members.length, Math.round(Math.sqrt((PACK_ASPECT * members.length * h) / w))));
  dims.forEach((d, i) => {
    d.x = (i % cols) * w + w / 2;
    d.y = Math.floor(i / cols) * h + h / 2;
  });
}

const FOLD_ASPECT = 3, FOLD_MIN_H = 900, FOLD_GAP = 40;

/**
 * A layout far taller than wide (a chain of 30 layers, one per rank) is folded into columns of whole ranks, side by
 * side, about as wide as a canvas is (PACK_ASPECT), so that a fit shows it at a readable scale. An edge between two
 * columns loses dagre's route (it is drawn straight between the boxes).
 */
function fold(g: DGraph, members: string[]): void {
  type D = { x: number; y: number; width: number; height: number };
  const dims = members.map((m) => g.node(m) as D);
  const top = Math.min(...dims.map((d) => d.y - d.height / 2)), bottom = Math.max(...dims.map((d) => d.y + d.height / 2));
  const left = Math.min(...dims.map((d) => d.x - d.width / 2)), right = Math.max(...dims.map((d) => d.x + d.width / 2));
  const h = bottom - top, w = right - left;
  if (h < FOLD_MIN_H || h < FOLD_ASPECT * w) return;
  const ranks = [...new Set(dims.map((d) => d.y))].sort((a, b) => a - b);
  const cols = Math.min(ranks.length, Math.max(2, Math.round(Math.sqrt((PACK_ASPECT * h) / w))));
  const per = Math.ceil(ranks.length / cols);
  const col = new Map(ranks.map((y, i) => [y, Math.floor(i / per)]));
  const colTop = Array.from({ length: cols }, (_, c) => Math.min(...dims.filter((d) => col.get(d.y) === c).map((d) => d.y - d.height / 2)));
  const shift = (c: number) => ({ dx: c * (w + FOLD_GAP), dy: top - (Number.isFinite(colTop[c]) ? colTop[c] : top) });
  const colOf = new Map<string, number>();
  members.forEach((m, i) => {
    const c = col.get(dims[i].y)!, { dx, dy } = shift(c);
    colOf.set(m, c);
    dims[i].x += dx;
    dims[i].y += dy;
  });
  for (const ed of g.edges()) {
    const d = g.edge(ed) as { direct: string; points: { x: number; y: number }[]; x?: number; y?: number };
    const c = colOf.get(ed.v);
    if (c === undefined || c !== colOf.get(ed.w)) { d.direct = ""; continue; }  // across columns: drawn straight
    const { dx, dy } = shift(c);
    d.points = d.points.map((q) => ({ x: q.x + dx, y: q.y + dy }));
    if (d.x !== undefined && d.y !== undefined) { d.x += dx; d.y += dy; }
  }
}

/**
 * Lay out synchronously; `layoutAsync` (layout.ts: in a Web Worker) is what the views call. Each expanded group is
 * laid out on its own, bottom-up, with its child groups as fixed-size boxes and the edges between its children
 * aggregated (as ELK's SEPARATE_CHILDREN): dagre's compound mode took seconds on real Plans, a few small flat layouts
 * take milliseconds, and a layout per group is what an expand changes. Edges inside one group follow dagre's route;
 * edges between groups are drawn straight between the boxes.
 */
export function layoutSync(v: Visible, edgeLabels = true): Layout {
  const t0 = performance.now();
  const ranked = rankedEdges(v);
  const parentOf = new Map<string, string | null>();
  for (const n of v.nodes) parentOf.set(n.id, n.parent);
  for (const c of v.clusters) parentOf.set(c.id, c.parent);
  const kids = new Map<string | null, string[]>();
  for (const [id, p] of parentOf) (kids.get(p) ?? kids.set(p, []).get(p)!).push(id);
  const isCluster = new Set(v.clusters.map((c) => c.id));
  const depth = new Map<string, number>();
  const chain = (id: string): string[] => {  // id and its cluster ancestors, innermost first
    const out = [id];
    for (let p = parentOf.get(id) ?? null; p !== null; p = parentOf.get(p) ?? null) out.push(p);
    return out;
  };
  for (const c of v.clusters) depth.set(c.id, chain(c.id).length - 1);
  // Which child of `group` holds this box (or null when it is outside the group).
  const childIn = (id: string, group: string | null): string | null => {
    const ch = chain(id);
    if (group === null) return ch[ch.length - 1];
    const i = ch.indexOf(group);
    return i > 0 ? ch[i - 1] : null;
  };
  const size = new Map<string, { w: number; h: number }>();
  for (const n of v.nodes) size.set(n.id, nodeSize(n));
  const local = new Map<string, { x: number; y: number }>();  // top-left, relative to the parent's content origin
  const routes = new Map<string, { pts: { x: number; y: number }[]; label: { x: number; y: number } | null; group: string | null }>();
  const PAD = 10;
  const layoutGroup = (group: string | null): void => {
    const members = kids.get(group) ?? [];
    for (const m of members) if (isCluster.has(m)) layoutGroup(m);
    const g = new DGraph({ multigraph: true });
    g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 36, edgesep: 8, marginx: 0, marginy: 0 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const m of members) g.setNode(m, { width: size.get(m)!.w, height: size.get(m)!.h });
    const seen = new Set<string>();
    for (const e of v.edges) {
      if (!ranked.has(e.id)) continue;
      const a = childIn(e.source, group), b = childIn(e.target, group);
      if (a === null || b === null || a === b) continue;
      const direct = a === e.source && b === e.target;
      const key = direct ? e.id : `${a}\u0000${b}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const ls = direct && edgeLabels ? labelSize(e.label) : { w: 0, h: 0 };
      g.setEdge(a, b, { width: ls.w, height: ls.h, labelpos: "c", weight: e.kind === "ctrl" ? 1 : 2, direct: direct ? e.id : "" }, key);
    }
    if (members.length >= PACK_MIN && g.edgeCount() === 0) packGrid(g, members);
    else {
      dagreLayout(g);
      fold(g, members);
    }
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const m of members) {
      const d = g.node(m) as { x: number; y: number; width: number; height: number };
      x0 = Math.min(x0, d.x - d.width / 2); y0 = Math.min(y0, d.y - d.height / 2);
      x1 = Math.max(x1, d.x + d.width / 2); y1 = Math.max(y1, d.y + d.height / 2);
    }
    if (!members.length) { x0 = y0 = 0; x1 = 80; y1 = 10; }
    if (group !== null) {
      // A box narrower than its header grows to hold it, its content centred.
      const c = v.clusters.find((x) => x.id === group)!;
      const extra = headerWidth(c.label, c.count) - (x1 - x0 + 2 * PAD);
      if (extra > 0) { x0 -= extra / 2; x1 += extra / 2; }
    }
    for (const m of members) {
      const d = g.node(m) as { x: number; y: number; width: number; height: number };
      local.set(m, { x: d.x - d.width / 2 - x0, y: d.y - d.height / 2 - y0 });
    }
    for (const ed of g.edges()) {
      const d = g.edge(ed) as { direct: string; points: { x: number; y: number }[]; x?: number; y?: number };
      if (!d.direct) continue;
      routes.set(d.direct, { pts: d.points.map((q) => ({ x: q.x - x0, y: q.y - y0 })),
        label: d.x !== undefined && d.y !== undefined ? { x: d.x - x0, y: d.y - y0 } : null, group });
    }
    if (group !== null) size.set(group, { w: x1 - x0 + 2 * PAD, h: y1 - y0 + 2 * PAD + HEADER });
  };
  layoutGroup(null);
  // Absolute positions: a group's content starts below its header, inside its padding.
  const origin = new Map<string | null, { x: number; y: number }>([[null, { x: 16, y: 16 }]]);
  const nodes = new Map<string, NodeBox>();
  const clusters: ClusterBox[] = [];
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  const grow = (b: Box): void => {
    x0 = Math.min(x0, b.x); y0 = Math.min(y0, b.y); x1 = Math.max(x1, b.x + b.w); y1 = Math.max(y1, b.y + b.h);
  };
  const place = (group: string | null): void => {
    const o = origin.get(group)!;
    for (const m of kids.get(group) ?? []) {
      const l = local.get(m)!, s = size.get(m)!;
      const b = { x: o.x + l.x, y: o.y + l.y, w: s.w, h: s.h };
      grow(b);
      if (isCluster.has(m)) {
        const c = v.clusters.find((x) => x.id === m)!;
        clusters.push({ id: m, label: c.label, count: c.count, depth: depth.get(m) ?? 0, ...b });
        origin.set(m, { x: b.x + PAD, y: b.y + PAD + HEADER });
        place(m);
      } else nodes.set(m, { ...b, node: v.nodes.find((x) => x.id === m)! });
    }
  };
  place(null);
  clusters.sort((a, b) => a.depth - b.depth);
  const edges: EdgePath[] = v.edges.map((e) => {
    const r = routes.get(e.id);
    if (!r) return auxEdge(e, nodes, ranked.has(e.id));
    const o = origin.get(r.group)!;
    const points = r.pts.map((q) => ({ x: q.x + o.x, y: q.y + o.y })).filter((q) => Number.isFinite(q.x) && Number.isFinite(q.y));
    for (const q of points) grow({ x: q.x, y: q.y, w: 0, h: 0 });
    return { edge: e, points, labelAt: edgeLabels && e.label && r.label ? { x: r.label.x + o.x, y: r.label.y + o.y } : null, aux: false };
  });
  if (!Number.isFinite(x0)) { x0 = 0; y0 = 0; x1 = 100; y1 = 40; }
  return { nodes, clusters, edges, bounds: { x: x0, y: y0, w: x1 - x0, h: y1 - y0 }, ms: performance.now() - t0 };
}

