// The rewrite stepper (tinygrad's graph-rewrite viewer for flowlab's compile): every rewrite from the traced jobs to
// the Plan, one at a time, each drawn by the compare view (before on the left, after on the right, added / removed /
// changed in its colours and legend). ← / → (the buttons, or the arrow keys anywhere in the view) step; the header
// names the rewrite, its job and the function that made it (path:line and its def line). On the after side the
// nodes that feed an added node are outlined ("parent of an added node"). A click on a node of the after side says
// which rewrite made it, with a link there; "made by…" finds the rewrite that made a named op, task or register.
// Steps are built on first visit and kept (a revisit only shows it again); the neighbours are built ahead.
import { CompareView } from "./compare.js";
import { button, h } from "./dom.js";
import type { RewritesPayload } from "./payload.js";

const STYLE_ID = "fl-rewrites-style";
const BIG_JOB = 60;  // nodes: past it a step opens on the added node's innermost group, not its whole job
const CSS = `
.fl-rw-bar{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-bottom:4px}
.fl-rw-pos{font-variant-numeric:tabular-nums;color:var(--fl-muted);min-width:64px}
.fl-rw-name{font-weight:600}
.fl-rw-source{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;color:var(--fl-fg);background:var(--fl-pane);border:1px solid var(--fl-soft);border-radius:3px;padding:2px 6px;margin:0 0 4px;white-space:pre-wrap;word-break:break-all}
.fl-rw-source .fl-rw-path{color:var(--fl-link)}
.fl-rw-made{color:var(--fl-muted);font-size:12px;min-height:16px;margin:2px 0}
.fl-rw-made input{width:200px}
.fl-node.c-parent:not(.c-added) .fl-shape{stroke:#1a7f37;stroke-width:4px;stroke-dasharray:none}
.fl-diff-swatch.c-parent{background:transparent;border:3px solid #1a7f37}
.fl-rewrites:focus{outline:none}
.fl-rw-stage{position:relative}
.fl-rw-hidden{position:absolute;left:-20000px;top:0;visibility:hidden}
`;

function ensureRewritesStyle(doc: Document): void {
  if (doc.getElementById(STYLE_ID)) return;
  const style = doc.createElement("style");
  style.id = STYLE_ID;
  style.textContent = CSS;
  doc.head.append(style);
}

export class RewritesView {
  readonly root = h("div", "fl-rewrites");
  index = -1;
  ready: Promise<void> = Promise.resolve();
  private readonly views = new Map<number, CompareView>();
  private readonly reveals = new Map<number, Promise<void>>();
  private readonly stage = h("div", "fl-rw-stage");
  private readonly pos = h("span", "fl-rw-pos");
  private readonly name = h("span", "fl-rw-name");
  private readonly source = h("div", "fl-rw-source");
  private readonly made = h("div", "fl-rw-made");
  private readonly picker = h("select");
  private readonly prev: HTMLButtonElement;
  private readonly next: HTMLButtonElement;

  constructor(readonly payload: RewritesPayload, private readonly height = 420) {
    ensureRewritesStyle(this.root.ownerDocument ?? document);
    const n = payload.steps.length;
    this.prev = button("◀ prev", "the rewrite before (←)", () => this.go(this.index - 1));
    this.next = button("next ▶", "the rewrite after (→)", () => this.go(this.index + 1));
    payload.steps.forEach((s, i) => {
      const opt = h("option", "", `#${s.index} ${s.name} · ${s.kind === "plan" ? "Plan" : s.job}`);
      opt.value = String(i);
      this.picker.append(opt);
    });
    this.picker.title = "every rewrite, in order: pick one";
    this.picker.addEventListener("change", () => this.go(Number(this.picker.value)));
    const find = h("input");
    find.placeholder = "made by… (op, job/op, task)";
    find.title = "the rewrite that first added an op (job/op), task (job/op, job/op [1]) or register (job/op out): Enter";
    find.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter") return;
      ev.stopPropagation();
      this.findMaker(find.value.trim());
    });
    const bar = h("div", "fl-rw-bar");
    const legend = h("span", "fl-diff-chip");
    legend.append(h("span", "fl-diff-swatch c-parent"), h("span", "", "parent of an added node"));
    bar.append(this.prev, this.next, this.pos, this.name, this.picker, find, legend);
    this.root.tabIndex = 0;
    this.root.title = "← / →: the rewrite before / after";
    this.root.addEventListener("keydown", (ev) => {
      if ((ev.target as HTMLElement | null)?.tagName === "INPUT" || (ev.target as HTMLElement | null)?.tagName === "SELECT") return;
      if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
        ev.preventDefault();
        ev.stopPropagation();
        this.go(this.index + (ev.key === "ArrowLeft" ? -1 : 1));
      }
    });
    this.stage.addEventListener("pointerup", () => requestAnimationFrame(() => this.sayMaker()));
    this.root.append(bar, this.source, this.made, this.stage);
    this.root.dataset.steps = String(n);
    this.go(payload.index);
  }

  /** Show rewrite `i` (clamped to the steps): its compare view, built on first visit, and its header. */
  go(i: number): void {
    const n = this.payload.steps.length;
    i = Math.max(0, Math.min(n - 1, i));
    if (i === this.index) return;
    const old = this.views.get(this.index);
    if (old) this.hide(old.root);
    this.index = i;
    const step = this.payload.steps[i];
    const view = this.view(i);
    view.root.classList.remove("fl-rw-hidden");
    view.root.style.width = "";
    this.pos.textContent = `${i + 1} / ${n}`;
    this.name.textContent = `${step.name} on ${step.kind === "plan" ? "the Plan" : step.job}`;
    const path = h("span", "fl-rw-path", step.source);
    this.source.replaceChildren(path, step.source_line ? `  ${step.source_line}` : "");
    this.source.title = `the function that made this rewrite: ${step.source}`;
    this.made.textContent = "";
    this.picker.value = String(i);
    this.prev.disabled = i === 0;
    this.next.disabled = i === n - 1;
    this.root.dataset.index = String(i);
    this.ready = this.revealed(i).then(() => {
      // build the neighbours ahead, so that the next step shows at once
      if (this.index === i) for (const j of [i + 1, i - 1]) if (j >= 0 && j < n) void this.revealed(j, true);
    });
  }

  /** Out of sight but laid out at the stage's width, so that showing it later needs no layout. */
  private hide(el: HTMLElement): void {
    el.style.width = `${this.stage.clientWidth || this.root.clientWidth}px`;
    el.classList.add("fl-rw-hidden");
  }

  private view(i: number, hidden = false): CompareView {
    let view = this.views.get(i);
    if (!view) {
      if (hidden) {
        const probe = h("div");
        this.hide(probe);  // the width first: the panes lay out at it
        view = new CompareView(this.payload.steps[i].compare, this.height);
        view.root.style.width = probe.style.width;
        view.root.classList.add("fl-rw-hidden");
      } else {
        view = new CompareView(this.payload.steps[i].compare, this.height);
      }
      view.root.dataset.step = String(i);
      this.stage.append(view.root);
      this.views.set(i, view);
    }
    return view;
  }

  /** Step `i`'s view, built and laid out, with the groups holding its added nodes (the first few) opened. */
  private revealed(i: number, hidden = false): Promise<void> {
    const view = this.view(i, hidden);
    const done = this.reveals.get(i);
    if (done) return done;
    const added = this.payload.steps[i].compare.b.graph.nodes.filter((nd) => nd.classes?.includes("added")).map((nd) => nd.id);
    const work = view.ready.then(async () => {
      for (const id of added.slice(0, 4)) await view.right.focus(id, false);  // a few: each may open groups
      if (added.length) {
        // show the job (outermost group) holding the first added node at a readable scale, on both sides; in a big
        // job, the innermost group holding it (a layer's scope) instead
        const graph = this.payload.steps[i].compare.b.graph;
        const groups = new Map(graph.groups.map((g) => [g.id, g]));
        const inner = graph.nodes.find((nd) => nd.id === added[0])?.parent ?? null;
        let top = inner;
        while (top !== null && groups.get(top)?.parent) top = groups.get(top)!.parent;
        const within = (nd: { parent: string | null }): boolean => {
          for (let p = nd.parent; p !== null; p = groups.get(p)?.parent ?? null) if (p === top) return true;
          return false;
        };
        if (top !== null && graph.nodes.filter(within).length > BIG_JOB) top = inner;
        view.right.fit();
        if (top !== null) {
          view.right.showBox(top);
          view.left.showBox(top);  // the same job on the left, where it is (a job's group id is the same there)
        }
      }
      view.root.dataset.revealed = "1";
    });
    this.reveals.set(i, work);
    return work;
  }

  /** Go to rewrite `i` and select `node` on its after side, saying which rewrite made it (the Plan browser's
   * "made by" link: provenance.ts). Resolves once the step shows the node. */
  async showNode(i: number, node: string): Promise<void> {
    this.go(i);
    await this.ready;
    const view = this.views.get(this.index);
    if (!view) return;
    await view.right.focus(node);
    this.sayMaker();
    this.root.dataset.shown = `${this.index} ${node}`;
  }

  /** After a click on the after side: which rewrite made the selected node, with a link to it. */
  private sayMaker(): void {
    const view = this.views.get(this.index);
    const sel = view?.right.root.querySelector(".fl-node.sel") as HTMLElement | null | undefined;
    const id = sel?.dataset.id;
    if (!id) return;
    const step = this.payload.steps[this.index];
    const label = step.compare.b.graph.nodes.find((nd) => nd.id === id)?.label ?? id;
    const at = step.made_by[id];
    this.made.replaceChildren();
    if (at === undefined) {
      this.made.append(`${label}: made by no rewrite shown here (traced from the user's code, or made before these)`);
      return;
    }
    const link = h("span", "fl-link", `#${this.payload.steps[at].index} ${this.payload.steps[at].name}`);
    link.addEventListener("click", () => this.go(at));
    this.made.append(`${label}: made by `, link);
  }

  private findMaker(name: string): void {
    if (!name) return;
    const at = this.payload.made[name];
    if (at === undefined) {
      this.made.textContent = `no rewrite made "${name}" (a traced op, or no such name: ops are job/op)`;
      return;
    }
    this.go(at);
    this.made.textContent = `${name}: made by #${this.payload.steps[at].index} ${this.payload.steps[at].name}`;
  }

  destroy(): void { for (const v of this.views.values()) v.destroy(); }
}
