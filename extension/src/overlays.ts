// Edge overlays (Model Explorer's): where a view has many shared-memory, control or hub-fan edges (a 30-layer job:
// ~130 dashed edges out of one "shared memory" box), they are drawn only around the selected box, HOPS deep, and a
// toolbar toggle shows them all. Data edges that dagre ranked (the data flow) are always drawn.
import { button } from "./dom.js";
import { HUB_DEGREE } from "./layoutcore.js";

/** How many overlay edges a view draws before it keeps them to the selection. */
export const OVERLAY_MAX = 24;
/** How far from the selected box its overlay edges reach (edges, through the boxes they join). */
export const HOPS = 2;

function isOverlay(el: Element): boolean {
  return el.classList.contains("kind-shared_mem") || el.classList.contains("kind-ctrl") || el.classList.contains("aux");
}

export class EdgeOverlays {
  all = false;
  readonly toggle: HTMLButtonElement;

  constructor(private readonly redraw: () => void) {
    this.toggle = button("all edges", "draw every shared-memory, control and hub edge (again: only the selected box's)",
      () => { this.all = !this.all; this.redraw(); });
    this.toggle.classList.add("fl-edges-toggle");
  }

  /** Show the overlay edges under `layer` that touch `selected` within HOPS edges (every one when `all`, or when
   * there are few); says on the canvas' dataset how many are hidden. */
  apply(layer: SVGGElement, selected: string | null): void {
    const edges = [...layer.querySelectorAll<SVGGElement>(".fl-edge")].filter(isOverlay);
    const few = edges.length <= OVERLAY_MAX;
    this.toggle.style.display = few ? "none" : "";
    this.toggle.textContent = this.all ? "fewer edges" : "all edges";
    this.toggle.classList.toggle("fl-view-on", this.all);
    const near = new Set<SVGGElement>();
    if (selected !== null && !few && !this.all) {
      // a hub (the shared-memory group, a tick) ends a path: through it, every box would be two hops away
      const degree = new Map<string, number>();
      for (const el of edges) for (const end of [el.dataset.source ?? "", el.dataset.target ?? ""]) degree.set(end, (degree.get(end) ?? 0) + 1);
      let front = new Set([selected]);
      const seen = new Set(front);
      for (let hop = 0; hop < HOPS && front.size; hop++) {
        const next = new Set<string>();
        for (const el of edges) {
          const a = el.dataset.source ?? "", b = el.dataset.target ?? "";
          if (front.has(a) || front.has(b)) {
            near.add(el);
            for (const end of [a, b]) {
              if (seen.has(end)) continue;
              seen.add(end);
              if ((degree.get(end) ?? 0) <= HUB_DEGREE) next.add(end);
            }
          }
        }
        front = next;
      }
    }
    let hidden = 0;
    for (const el of edges) {
      const show = few || this.all || near.has(el);
      el.style.display = show ? "" : "none";
      if (!show) hidden++;
    }
    const canvas = layer.closest<HTMLElement>(".fl-canvas");
    if (canvas) canvas.dataset.hiddenEdges = String(hidden);
  }
}
