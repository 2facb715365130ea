// The compare view (Model Explorer's split compare): two graph views side by side, before on the left and after on
// the right, with linked selection (a click selects the match on the other side) and linked pan/zoom, the diff marks
// in colour with a legend, and the things that did not match or changed listed (a click shows them).
import { h } from "./dom.js";
import { GraphView } from "./graphview.js";
import { DIFF_MARKS, diffLegend } from "./legend.js";
import type { CompareItem, ComparePayload } from "./payload.js";

const WHERE: Record<string, string> = { removed: "left only", added: "right only", changed: "both sides" };

export class CompareView {
  readonly root = h("div", "fl-compare");
  readonly left: GraphView;
  readonly right: GraphView;
  readonly ready: Promise<void>;
  private readonly toRight = new Map<string, string>();
  private readonly toLeft = new Map<string, string>();
  private linked = true;

  constructor(readonly payload: ComparePayload, height = 460) {
    for (const [a, b] of payload.pairs) { this.toRight.set(a, b); this.toLeft.set(b, a); }
    const counts: Record<string, number> = { added: 0, removed: 0, changed: 0 };
    for (const it of payload.items) counts[it.status] = (counts[it.status] ?? 0) + 1;
    const link = h("label", "fl-compare-link");
    const box = h("input");
    box.type = "checkbox";
    box.checked = true;
    box.addEventListener("change", () => { this.linked = box.checked; });
    link.append(box, " link pan and zoom");
    const bar = h("div", "fl-toolbar");
    // one legend for both panes (theirs are hidden): the three statuses, and the register outline where drawn
    const outs = DIFF_MARKS.filter((m) => m.startsWith("out-")
      && [payload.a.graph, payload.b.graph].some((g) => g.nodes.some((n) => n.classes?.includes(m) && !n.classes.includes(m.slice(4)))));
    bar.append(diffLegend(["removed", "added", "changed", ...outs], counts)!, link);
    this.left = new GraphView(payload.a.graph, {
      height, onSelect: (id) => this.follow(id, this.toRight, this.right),
      onView: (k, x, y) => { if (this.linked) this.right.setView(k, x, y); },
    });
    this.right = new GraphView(payload.b.graph, {
      height, onSelect: (id) => this.follow(id, this.toLeft, this.left),
      onView: (k, x, y) => { if (this.linked) this.left.setView(k, x, y); },
    });
    const panes = h("div", "fl-compare-panes");
    for (const [label, view] of [[payload.labels[0], this.left], [payload.labels[1], this.right]] as const) {
      const pane = h("div", "fl-compare-pane");
      pane.append(h("div", "fl-compare-head", label), view.root);
      panes.append(pane);
    }
    this.root.append(bar, panes, this.list(payload.items));
    this.ready = Promise.all([this.left.ready, this.right.ready]).then(() => undefined);
  }

  /** A selection on one side selects (and shows) its match on the other, or clears the other side's selection. */
  private follow(id: string | null, pairs: Map<string, string>, other: GraphView): void {
    const match = id === null ? undefined : pairs.get(id);
    if (match === undefined) other.select(null, false);
    else void other.focus(match);
  }

  private list(items: CompareItem[]): HTMLElement {
    const panel = h("details", "fl-panel");
    panel.open = items.length > 0 && items.length <= 40;
    const byStatus = (s: string): CompareItem[] => items.filter((i) => i.status === s);
    const unmatched = byStatus("removed").length + byStatus("added").length;
    panel.append(h("summary", "", items.length
      ? `${unmatched} unmatched (left only: removed, right only: added), ${byStatus("changed").length} changed`
      : "no differences"));
    const ul = h("ul", "fl-compare-list");
    for (const status of ["removed", "added", "changed"]) {
      for (const it of byStatus(status)) {
        const li = h("li");
        const link = h("span", "fl-link", it.label);
        link.title = `${it.status} (${WHERE[it.status]}): ${it.summary}`;
        link.addEventListener("click", () => this.show(it));
        li.append(h("span", `fl-diff-swatch c-${it.status}`), link,
          h("span", "fl-muted", ` ${it.what} ${it.status}${it.status === "changed" && it.summary.includes(": ") ? ` · ${it.summary.slice(it.summary.indexOf(": ") + 2)}` : ""}`));
        ul.append(li);
      }
    }
    panel.append(ul);
    return panel;
  }

  /** Show a listed thing: select it on its side(s). */
  private show(it: CompareItem): void {
    if (it.a) void this.left.focus(it.a); else this.left.select(null, false);
    if (it.b) void this.right.focus(it.b); else this.right.select(null, false);
  }

  destroy(): void { this.left.destroy(); this.right.destroy(); }
}
