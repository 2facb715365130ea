// The recorded run viewer: a slider over the acts highlights the acting node and the registers it read and wrote,
// lists the blobs written with their stats, and moves the memory view's cursor.
import { button, fmt, h, kvTable } from "./dom.js";
import { LINKED_READABLE } from "./firstview.js";
import { GraphView } from "./graphview.js";
import { MemoryView } from "./memory.js";
import { attachOverlay } from "./overlay.js";
import type { RunPayload } from "./payload.js";

/** What an act's `tier` means to a person: which kernel computed it (flowlab/kernels/tiered.py). */
export function tierText(tier: string | undefined | null): string {
  if (tier === "numba") return "numba (the compiled Numba kernel)";
  if (tier === "reference") return "reference (the NumPy kernel)";
  return tier ? tier : "none (no op kernel ran in this act)";
}

export class RunView {
  readonly root = h("div", "fl-run");
  readonly graph: GraphView;
  readonly slider = h("input", "fl-slider");
  private readonly label = h("span", "fl-act-label");
  private readonly blobs = h("div", "fl-panel");
  readonly memory = new MemoryView();
  act = 0;

  constructor(readonly payload: RunPayload) {
    // the acting box moves through every job: keep more of them open than a first look at a Plan does
    // numbers on the graph (overlay.ts): the run's act times, NaN counts, ... (show_run(dbg, overlay=...))
    const overlay = payload.overlay ? attachOverlay(payload.overlay, payload.graph, { firstScale: LINKED_READABLE }) : null;
    this.graph = new GraphView(payload.graph, overlay?.opts ?? { firstScale: LINKED_READABLE });
    const n = payload.acts.length;
    this.slider.type = "range";
    this.slider.min = "0";
    this.slider.max = String(Math.max(0, n - 1));
    this.slider.value = "0";
    this.slider.addEventListener("input", () => this.show(Number(this.slider.value)));
    const row = h("div", "fl-row");
    row.append(h("b", "", "act"), button("◀", "previous act", () => this.show(this.act - 1)), this.slider,
      button("▶", "next act", () => this.show(this.act + 1)), this.label);
    this.root.append(row, this.graph.root);
    overlay?.mount(this.graph, this.root);  // the legend in the graph's toolbar, its lists under the graph
    this.root.append(this.blobs, this.memory.root);
    this.memory.set(payload.memory, n);
    if (n) void this.graph.ready.then(() => this.show(0));
    else this.label.textContent = "this run recorded no acts";
  }

  show(i: number): void {
    const acts = this.payload.acts;
    if (!acts.length) return;
    i = Math.max(0, Math.min(acts.length - 1, i));
    this.act = i;
    this.slider.value = String(i);
    const a = acts[i];
    // the tier next to the slider too: scrubbing through a tiered run shows where the kernels switched to Numba
    this.label.textContent = `${i + 1} / ${acts.length}: ${a.actor}${a.job ? ` (${a.job})` : ""}${a.tier ? ` · ${a.tier}` : ""}`;
    this.graph.mark("acting", a.node ? [a.node] : []);
    this.graph.mark("written", a.writes);
    this.graph.mark("read", a.reads);
    if (a.node) this.graph.scrollIntoView(this.graph.tree.representative(a.node));
    this.blobs.replaceChildren(h("h4", "", `act ${a.index}: ${a.actor} read [${a.reads.join(", ")}] wrote [${a.writes.join(", ")}]`),
      kvTable([["kernel tier", tierText(a.tier)]]));
    const t = h("table", "fl-actors");
    const head = h("tr");
    for (const c of ["register", "shape", "dtype", "min", "max", "mean", "NaN", "Inf"]) head.append(h("th", "", c));
    t.append(head);
    for (const [r, b] of Object.entries(a.blobs)) {
      const tr = h("tr");
      for (const v of [r, b.shape ? `[${b.shape.join(", ")}]` : "", b.dtype ?? "", fmt(b.min), fmt(b.max), fmt(b.mean), fmt(b.nan), fmt(b.inf)]) tr.append(h("td", "", v));
      if ((b.nan ?? 0) > 0 || (b.inf ?? 0) > 0) tr.classList.add("next");
      t.append(tr);
    }
    this.blobs.append(t);
    this.memory.at(i);
  }
}
