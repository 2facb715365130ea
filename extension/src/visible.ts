// What is on screen: the group tree with its collapse state, reduced to the visible nodes and aggregated edges.
import type { EdgeKind, GEdge, GGroup, GNode, Graph } from "./payload.js";

export const MAX_VISIBLE = 300;

export interface VNode {
  id: string; label: string; kind: string; parent: string | null;
  group?: GGroup; count?: number; node?: GNode;  // group: a collapsed group drawn as one box of `count` nodes
}
export interface VCluster { id: string; label: string; parent: string | null; count: number }
export interface VEdge {
  id: string; source: string; target: string; kind: EdgeKind; label: string; count: number; members: string[];
}
export interface Visible { nodes: VNode[]; clusters: VCluster[]; edges: VEdge[]; key: string }

/** The group tree of one graph: parents, children and the number of nodes under each group. */
export class GroupTree {
  readonly groups = new Map<string, GGroup>();
  readonly nodes = new Map<string, GNode>();
  readonly childGroups = new Map<string | null, GGroup[]>();
  readonly childNodes = new Map<string | null, GNode[]>();
  readonly size = new Map<string, number>();
  readonly collapsed = new Set<string>();

  constructor(readonly graph: Graph) {
    for (const g of graph.groups) {
      this.groups.set(g.id, g);
      push(this.childGroups, g.parent, g);
      if (g.collapsed) this.collapsed.add(g.id);
    }
    for (const n of graph.nodes) {
      this.nodes.set(n.id, n);
      push(this.childNodes, n.parent, n);
      for (let p = n.parent; p !== null; p = this.groups.get(p)?.parent ?? null) this.size.set(p, (this.size.get(p) ?? 0) + 1);
    }
  }

  ancestors(id: string): string[] {
    const out: string[] = [];
    let p = this.nodes.get(id)?.parent ?? this.groups.get(id)?.parent ?? null;
    for (; p !== null; p = this.groups.get(p)?.parent ?? null) out.push(p);
    return out;
  }

  /** The id drawn for a node or group: itself, or its outermost collapsed ancestor. */
  representative(id: string): string {
    let rep = id;
    for (const a of this.ancestors(id)) if (this.collapsed.has(a)) rep = a;
    return rep;
  }

  isVisible(id: string): boolean { return this.representative(id) === id; }

  /** Expand every ancestor of `id` so that it is drawn itself. */
  reveal(id: string): boolean {
    let changed = false;
    for (const a of this.ancestors(id)) if (this.collapsed.delete(a)) changed = true;
    return changed;
  }

  toggle(groupId: string): void {
    if (this.collapsed.has(groupId)) this.collapsed.delete(groupId);
    else this.collapsed.add(groupId);
  }

  /** The number of boxes drawn with the current state (nodes plus collapsed groups). */
  visibleCount(): number {
    let n = 0;
    const walk = (parent: string | null): void => {
      n += this.childNodes.get(parent)?.length ?? 0;
      for (const g of this.childGroups.get(parent) ?? []) {
        if (this.collapsed.has(g.id)) n += 1;
        else walk(g.id);
      }
    };
    walk(null);
    return n;
  }

  /**
   * Keep at most `limit` boxes on screen: collapse the largest expanded groups that do not contain `keep` (the group
   * the user just expanded, or a node to reveal) until the view fits. Python already marks big groups collapsed; this
   * holds the bound for any payload and after the user expands things.
   */
  bound(limit = MAX_VISIBLE, keep: string | null = null): string[] {
    const protect = new Set<string>(keep ? [keep, ...this.ancestors(keep)] : []);
    const closed: string[] = [];
    while (this.visibleCount() > limit) {
      let best: GGroup | null = null;
      for (const g of this.groups.values()) {
        if (this.collapsed.has(g.id) || protect.has(g.id) || !this.isVisible(g.id)) continue;
        if (!best || (this.size.get(g.id) ?? 0) > (this.size.get(best.id) ?? 0)) best = g;
      }
      if (!best) {
        // Only the protected chain is left open: close the kept group's largest open children instead.
        let inner: GGroup | null = null;
        for (const g of this.groups.values()) {
          if (this.collapsed.has(g.id) || !this.isVisible(g.id) || g.id === keep || this.ancestors(keep ?? "").includes(g.id)) continue;
          if (!inner || (this.size.get(g.id) ?? 0) > (this.size.get(inner.id) ?? 0)) inner = g;
        }
        if (!inner) break;
        best = inner;
      }
      this.collapsed.add(best.id);
      closed.push(best.id);
    }
    return closed;
  }

  visible(): Visible {
    const nodes: VNode[] = [], clusters: VCluster[] = [];
    const walk = (parent: string | null): void => {
      for (const n of this.childNodes.get(parent) ?? []) nodes.push({ id: n.id, label: n.label, kind: n.kind, parent, node: n });
      for (const g of this.childGroups.get(parent) ?? []) {
        const count = this.size.get(g.id) ?? 0;
        if (this.collapsed.has(g.id)) nodes.push({ id: g.id, label: g.label, kind: "group", parent, group: g, count });
        else {
          clusters.push({ id: g.id, label: g.label, parent, count });
          walk(g.id);
        }
      }
    };
    walk(null);
    const edges = aggregate(this.graph.edges, (id) => this.representative(id));
    const key = [...this.collapsed].sort().join("\u0000");
    return { nodes, clusters, edges, key };
  }
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const l = m.get(k);
  if (l) l.push(v);
  else m.set(k, [v]);
}

/** Edges between representatives; parallel ones (same ends and kind) become one edge with a count. */
export function aggregate(edges: GEdge[], rep: (id: string) => string): VEdge[] {
  const out = new Map<string, VEdge>();
  for (const e of edges) {
    const s = rep(e.source), t = rep(e.target);
    if (s === t) continue;  // inside one collapsed group
    const k = `${s}\u0000${t}\u0000${e.kind}`;
    const v = out.get(k);
    if (v) {
      v.count += 1;
      v.members.push(e.id);
      v.label = `${v.count} edges`;
    } else {
      const direct = s === e.source && t === e.target;
      out.set(k, { id: direct ? e.id : `agg:${k}`, source: s, target: t, kind: e.kind, label: e.label ?? "", count: 1, members: [e.id] });
    }
  }
  return [...out.values()];
}

/**
 * The same graph with device/thread lanes as the outermost groups: each lane holds a copy of the group tree of the
 * nodes that run on it (ids `lane:i/<group id>`); node ids, edges and details stay as they are. Nodes that name no
 * lane go to a last "(no lane)" lane.
 */
export function groupByLane(g: Graph): Graph {
  if (g.lanes.length < 2) return g;
  const byId = new Map(g.groups.map((x) => [x.id, x]));
  const groups: GGroup[] = [];
  const laneIndex = (n: GNode): number => (n.lane && g.lanes.includes(n.lane) ? g.lanes.indexOf(n.lane) : g.lanes.length);
  const used = new Set(g.nodes.map(laneIndex));
  [...g.lanes, "(no lane)"].forEach((l, i) => {
    if (used.has(i)) groups.push({ id: `lane:${i}`, label: l, parent: null, kind: "lane", collapsed: false });
  });
  const made = new Set<string>();
  const clone = (gid: string, lane: number): string => {
    const id = `lane:${lane}/${gid}`;
    if (!made.has(id)) {
      made.add(id);
      const o = byId.get(gid)!;
      groups.push({ ...o, id, parent: o.parent === null ? `lane:${lane}` : clone(o.parent, lane) });
    }
    return id;
  };
  const nodes = g.nodes.map((n) => {
    const li = laneIndex(n);
    return { ...n, parent: n.parent === null ? `lane:${li}` : clone(n.parent, li) };
  });
  return { ...g, groups, nodes };
}
