// Layered layout of the visible graph with dagre (chosen over ELK: see bench/layout.ts and extension/README.md).
import { Graph as DGraph, layout as dagreLayout } from "@dagrejs/dagre";
import type { Visible, VEdge, VNode } from "./visible.js";

export interface Box { x: number; y: number; w: number; h: number }  // x, y: the top-left corner
export interface NodeBox extends Box { node: VNode }
export interface ClusterBox extends Box { id: string; label: string; count: number; depth: number }
export interface EdgePath { edge: VEdge; points: { x: number; y: number }[]; labelAt: { x: number; y: number } | null }
export interface Layout { nodes: Map<string, NodeBox>; clusters: ClusterBox[]; edges: EdgePath[]; bounds: Box; ms: number }

const CHAR_W = 6.6, NODE_H = 34, GROUP_H = 44, HEADER = 20;

export function nodeSize(n: VNode): { w: number; h: number } {
  const text = n.kind === "group" ? `${n.label} (${n.count})` : n.label;
  const sub = n.node?.type ?? "";
  const w = Math.min(280, Math.max(70, Math.max(text.length, sub.length * 0.85) * CHAR_W + 26));
  return { w, h: n.kind === "group" ? GROUP_H : NODE_H };
}

export function labelSize(text: string): { w: number; h: number } {
  return text ? { w: Math.min(180, text.length * 5.6 + 6), h: 12 } : { w: 0, h: 0 };
}

/** Lay out synchronously; `layoutAsync` (layout.ts: in a Web Worker) is what the views call. */
export function layoutSync(v: Visible, edgeLabels = true): Layout {
  const t0 = performance.now();
  const g = new DGraph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 36, edgesep: 8, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  const depth = new Map<string, number>();
  for (const c of v.clusters) {
    depth.set(c.id, c.parent === null ? 0 : (depth.get(c.parent) ?? 0) + 1);
    g.setNode(c.id, { label: c.label, paddingTop: HEADER });
  }
  for (const c of v.clusters) if (c.parent !== null) g.setParent(c.id, c.parent);
  for (const n of v.nodes) {
    const s = nodeSize(n);
    g.setNode(n.id, { width: s.w, height: s.h });
    if (n.parent !== null) g.setParent(n.id, n.parent);
  }
  for (const e of v.edges) {
    const ls = edgeLabels ? labelSize(e.label) : { w: 0, h: 0 };
    g.setEdge(e.source, e.target, { width: ls.w, height: ls.h, labelpos: "c", minlen: 1, weight: e.kind === "ctrl" ? 1 : 2 }, e.id);
  }
  dagreLayout(g);
  const nodes = new Map<string, NodeBox>();
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  const grow = (b: Box): void => {
    x0 = Math.min(x0, b.x); y0 = Math.min(y0, b.y); x1 = Math.max(x1, b.x + b.w); y1 = Math.max(y1, b.y + b.h);
  };
  for (const n of v.nodes) {
    const d = g.node(n.id) as { x: number; y: number; width: number; height: number };
    const b = { x: d.x - d.width / 2, y: d.y - d.height / 2, w: d.width, h: d.height, node: n };
    nodes.set(n.id, b);
    grow(b);
  }
  const clusters: ClusterBox[] = [];
  for (const c of v.clusters) {
    const d = g.node(c.id) as { x: number; y: number; width: number; height: number } | undefined;
    if (!d || !Number.isFinite(d.x)) continue;  // an expanded group with nothing inside
    // dagre does not reserve room for a cluster's title: grow the box upwards by a header.
    const b = { id: c.id, label: c.label, count: c.count, depth: depth.get(c.id) ?? 0,
      x: d.x - d.width / 2, y: d.y - d.height / 2 - HEADER, w: d.width, h: d.height + HEADER };
    clusters.push(b);
    grow(b);
  }
  clusters.sort((a, b) => a.depth - b.depth);
  const edges: EdgePath[] = v.edges.map((e) => {
    const d = g.edge({ v: e.source, w: e.target, name: e.id }) as { points: { x: number; y: number }[]; x?: number; y?: number; width?: number };
    const points = (d?.points ?? []).filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
    for (const p of points) grow({ x: p.x, y: p.y, w: 0, h: 0 });
    const labelAt = edgeLabels && e.label && d?.x !== undefined && d?.y !== undefined ? { x: d.x, y: d.y } : null;
    return { edge: e, points, labelAt };
  });
  if (!Number.isFinite(x0)) { x0 = 0; y0 = 0; x1 = 100; y1 = 40; }
  return { nodes, clusters, edges, bounds: { x: x0, y: y0, w: x1 - x0, h: y1 - y0 }, ms: performance.now() - t0 };
}

