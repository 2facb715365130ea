// A node box's second line: a boxing task's device and conversion ("cpu:0 · fc1-weight grad: P → B over cpu:0-1"),
// else its type with the device it runs on where the Plan has several ("NormalForward · cpu:1"). The layout sizes
// boxes by it, so it lives apart from the drawing code (the layout worker bundles this module, not draw.ts).
import type { GNode } from "./payload.js";

export function subText(n: GNode | undefined): string {
  if (!n) return "";
  if (n.note) return n.device ? `${n.device} · ${n.note}` : n.note;
  return [n.type, n.device].filter(Boolean).join(" · ");
}
