// The first view of a graph: readable (labels at least 11 px on screen), not just fitted. A fit that would shrink the
// labels below that shows less instead: other jobs collapsed first, then the smaller user jobs, then the inner
// levels (layers), each step at once; the user's biggest job stays open where it is at most two canvases at a
// readable scale, and the view then shows it at that scale with the minimap for the rest.
import type { Layout } from "./layoutcore.js";
import type { GroupTree, Visible } from "./visible.js";

/** The smallest scale of a first view: 12 px labels are 13 to 14 px boxes on screen, so 0.86 gives 11.2 px or more. */
export const READABLE = 0.86;
/** The first-view bar of views whose marks move through every job or may be in any (a compare view's linked
 * half-width panes, a recorded run's acting box): more stays open, 12 px labels at 5.4 px, other jobs close one by
 * one. */
export const LINKED_READABLE = 0.45;
/** The most canvases (across times down) the kept user job may cover at READABLE before it is collapsed too: a
 * chain of 30 layer boxes is five canvases down, which reads better as one collapsed job box. */
const SCREENS = 2;
/** Layout area per box, at least (the smallest box, 70 x 34, with the layout's 18 px gaps): more boxes than fit in
 * a canvas at this density cannot fit readably, so the rules collapse without laying out (a layout of 300 boxes
 * costs up to a second on a slow machine). */
const MIN_AREA_PER_BOX = 4000;

export interface FirstView {
  layout: Layout | null;  // null where no layout was asked for (`layoutOf` not given)
  changed: boolean;  // the collapse state changed (the caller redraws)
  anchor: string | null;  // where a view that cannot fit readably is centred: this cluster or box (null: the whole)
}

export function fitScale(l: Layout, W: number, H: number): number {
  return Math.min((W - 16) / l.bounds.w, (H - 16) / l.bounds.h);
}

function isUserJob(tree: GroupTree, id: string): boolean {
  const g = tree.groups.get(id);
  return g?.job_kind === "user" || (g?.kind === "job" && / \(user\)$/.test(g.label));
}

/**
 * Collapse groups of `tree` until the fitted layout's scale is at least `min` (see the file's comment). Without
 * `layoutOf` only the box count is judged (before the first layout: what cannot fit is collapsed before it is laid
 * out); with it, the layout decides, laid out only where the count leaves it a chance. `gradual` (a compare view's
 * pane, where a diff mark may be in any job) closes the other jobs one by one, biggest first.
 */
export function readableFirstView(tree: GroupTree, W: number, H: number, min = READABLE, gradual = false,
  layoutOf?: (v: Visible) => Layout): FirstView {
  let vis = tree.visible(), lay: Layout | null = null, changed = false;
  const most = ((W - 16) / min) * ((H - 16) / min) / MIN_AREA_PER_BOX;
  const layout = (): Layout | null => (lay ??= layoutOf?.(vis) ?? null);
  const unreadable = (): boolean => {
    if (vis.nodes.length > most) return true;
    const l = layout();
    return l !== null && fitScale(l, W, H) < min;
  };
  const close = (ids: string[]): void => {
    for (const id of ids) tree.collapsed.add(id);
    vis = tree.visible();
    lay = null;
    changed = true;
  };
  const parentOf = (): Map<string, string | null> => new Map(vis.clusters.map((c) => [c.id, c.parent]));
  const depthOf = (id: string, parents: Map<string, string | null>): number => {
    let d = 0;
    for (let p = parents.get(id) ?? null; p !== null; p = parents.get(p) ?? null) d++;
    return d;
  };
  const open = (depth: number): string[] => {
    const parents = parentOf();
    return vis.clusters.filter((c) => depthOf(c.id, parents) === depth).map((c) => c.id);
  };
  const size = (id: string): number => tree.size.get(id) ?? 0;
  // 1. every job other than the user's, at once (gradual: one by one, the biggest first)
  for (;;) {
    const others = open(0).filter((id) => !isUserJob(tree, id));
    if (!others.length || !unreadable()) break;
    close(gradual ? [others.reduce((a, b) => (size(a) >= size(b) ? a : b))] : others);
  }
  // 2. the user jobs but the biggest, at once: the biggest is the job the cell is about (a train job beside its
  // eval job)
  const users = open(0);
  if (users.length > 1 && unreadable()) {
    const keep = users.reduce((a, b) => (size(a) >= size(b) ? a : b));
    close(users.filter((id) => id !== keep));
  }
  // 3. the innermost open level at once (layers inside the kept job), never the job itself
  for (;;) {
    const parents = parentOf();
    const deepest = Math.max(0, ...vis.clusters.map((c) => depthOf(c.id, parents)));
    if (deepest === 0 || !unreadable()) break;
    close(open(deepest));
  }
  const last = open(0)[0];
  if (last === undefined || !unreadable() || !layoutOf) return { layout: layout(), changed, anchor: null };
  const c = layout()?.clusters.find((x) => x.id === last);
  if (c && Math.ceil((c.w * min) / W) * Math.ceil((c.h * min) / H) <= SCREENS) return { layout: layout(), changed, anchor: last };
  close([last]);  // its box is then where the view centres
  return { layout: layout(), changed, anchor: last };
}
