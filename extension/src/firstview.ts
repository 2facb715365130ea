// The first view of a graph: readable (labels at least 11 px on screen), not just fitted. A fit that would shrink the
// labels below that shows less instead: other jobs collapsed first, then the smaller user jobs, then the inner
// levels (layers); the user's biggest job stays open where it is at most two canvases at a readable scale, and the view
// then shows its top at that scale with the minimap for the rest.
import type { Layout } from "./layoutcore.js";
import type { GroupTree, Visible } from "./visible.js";

/** The smallest scale of a first view: 12 px labels are 13 to 14 px boxes on screen, so 0.86 gives 11.2 px or more. */
export const READABLE = 0.86;
/** A compare view's linked panes (half the width each) first show more of both sides: 12 px labels at 5.4 px. */
export const LINKED_READABLE = 0.45;
/** The most canvases (across times down) the kept user job may cover at READABLE before it is collapsed too: a
 * chain of 30 layer boxes is five canvases down, which reads better as one collapsed job box. */
const SCREENS = 2;

export interface FirstView {
  layout: Layout;
  changed: boolean;  // the collapse state changed (the caller redraws)
  anchor: string | null;  // where a view that cannot fit readably starts: this cluster's top (null: the whole graph)
}

type LayoutOf = (v: Visible) => Layout;

export function fitScale(l: Layout, W: number, H: number): number {
  return Math.min((W - 16) / l.bounds.w, (H - 16) / l.bounds.h);
}

function isUserJob(tree: GroupTree, id: string): boolean {
  const g = tree.groups.get(id);
  return g?.job_kind === "user" || (g?.kind === "job" && / \(user\)$/.test(g.label));
}

/** Collapse groups of `tree` until the fitted layout's scale is at least `min` (see the file's comment). */
export function readableFirstView(tree: GroupTree, start: Layout, layoutOf: LayoutOf, W: number, H: number,
  min = READABLE): FirstView {
  let layout = start, changed = false;
  const size = (id: string): number => tree.size.get(id) ?? 0;
  const close = (ids: string[]): void => {
    for (const id of ids) tree.collapsed.add(id);
    layout = layoutOf(tree.visible());
    changed = true;
  };
  const unreadable = (): boolean => fitScale(layout, W, H) < min;
  const open = (depth: number): string[] => layout.clusters.filter((c) => c.depth === depth).map((c) => c.id);
  // 1. jobs other than the user's, the biggest first
  for (;;) {
    const others = open(0).filter((id) => !isUserJob(tree, id));
    if (!unreadable() || !others.length) break;
    close([others.reduce((a, b) => (size(a) >= size(b) ? a : b))]);
  }
  // 2. the user jobs, the smallest first: the biggest is the job the cell is about (a train job beside its eval job)
  for (;;) {
    const users = open(0);
    if (!unreadable() || users.length <= 1) break;
    close([users.reduce((a, b) => (size(a) <= size(b) ? a : b))]);
  }
  // 3. the innermost open level at once (layers inside the kept job), never the job itself
  while (unreadable() && layout.clusters.some((c) => c.depth > 0)) {
    close(open(Math.max(...layout.clusters.map((c) => c.depth))));
  }
  const last = open(0)[0];
  if (!unreadable() || last === undefined) return { layout, changed, anchor: null };
  const c = layout.clusters.find((x) => x.id === last)!;
  if (Math.ceil((c.w * min) / W) * Math.ceil((c.h * min) / H) <= SCREENS) return { layout, changed, anchor: last };
  close([last]);
  return { layout, changed, anchor: null };
}
