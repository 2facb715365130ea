// Provenance from the Plan browser (issue 27 §2, "show the rewrite that made this"): a Plan payload's optional
// `provenance` section (flowlab/viz/payload_sections.py) maps each task to the rewrite that made it and carries the
// rewrites stepper's payload. A task's detail pane starts with "made by #k <Rewrite>"; the link opens the stepper
// (rewrites.ts) under the Plan at that rewrite, with the task selected on its after side.
import { button, h } from "./dom.js";
import type { GraphView, GraphViewOptions } from "./graphview.js";
import type { RewritesPayload } from "./payload.js";
import { RewritesView } from "./rewrites.js";

export interface ProvenanceData {
  made_by: Record<string, number>;  // node id -> position of the rewrite in `rewrites.steps` (the Plan stage)
  op_made: Record<string, [number, string]>;  // node id -> the job rewrite that made its op, and the op's node there
  steps: { index: number; name: string; job: string }[];
  rewrites: RewritesPayload;
}

/** Wire provenance into a Plan view: the detail pane's "made by" link, and the stepper it opens under the graph. */
export function attachProvenance(pv: ProvenanceData, opts: GraphViewOptions): {
  opts: GraphViewOptions; mount: (view: GraphView, el: HTMLElement) => void;
} {
  const box = h("div", "fl-panel fl-prov-panel");
  box.style.display = "none";
  let stepper: RewritesView | null = null;
  /** Open the stepper at rewrite `at` with `node` selected on its after side; resolves once it shows it. */
  const open = async (at: number, node: string): Promise<void> => {
    box.style.display = "";
    if (!stepper) {
      stepper = new RewritesView({ ...pv.rewrites, index: at }, 420);  // built at the step asked for, not the last
      const close = button("close", "close the rewrites", () => { box.style.display = "none"; });
      const head = h("div", "fl-prov-head");
      head.append(h("b", "", "the rewrite that made it "), close);
      box.append(head, stepper.root);
    }
    await stepper.showNode(at, node);
    box.scrollIntoView({ block: "nearest" });
  };
  const link = (at: number, node: string, what: string): HTMLElement => {
    const step = pv.steps[at];
    const a = h("a", "fl-link", `#${step.index} ${step.name}`);
    a.href = "#";
    a.title = `open the rewrites at the one that made this ${what}, with it selected`;
    a.dataset.step = String(at);
    a.addEventListener("click", (ev) => { ev.preventDefault(); void open(at, node); });
    const line = h("div", "fl-prov-made");
    line.append(`${what} made by `, a, ` on ${step.job === "Plan" ? "the Plan" : step.job}`);
    return line;
  };
  const detail = (pane: HTMLElement, id: string | null): void => {
    if (id === null || !id.startsWith("t:")) return;
    const at = pv.made_by[id], op = pv.op_made[id];
    const part = h("div", "fl-prov");
    if (op) part.append(link(op[0], op[1], "op"));
    if (at !== undefined) part.append(link(at, id, "task"));
    if (!part.childElementCount) part.append(h("div", "fl-prov-made", "made by: no rewrite (traced from the user's code)"));
    pane.insertBefore(part, pane.children[1] ?? null);  // under the title
  };
  return {
    opts: { ...opts, onDetail: (pane, id) => { detail(pane, id); opts.onDetail?.(pane, id); } },
    mount: (_view, el) => { el.append(box); },
  };
}
