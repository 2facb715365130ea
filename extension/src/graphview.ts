// The graph component used by every view: collapsible groups, layout of the visible part, pan/zoom/fit, minimap,
// search that highlights and jumps, a detail pane.
import { renderDetail } from "./detail.js";
import { button, h, s } from "./dom.js";
import { defs, drawLayout, drawMinimap } from "./draw.js";
import { fitScale, LINKED_READABLE, READABLE, readableFirstView } from "./firstview.js";
import { DIFF_MARKS, diffLegend, laneLegend } from "./legend.js";
import { type Layout, layoutAsync, layoutSync } from "./layout.js";
import { EdgeOverlays } from "./overlays.js";
import type { Graph } from "./payload.js";
import { GroupTree, groupByLane, MAX_VISIBLE, type Visible } from "./visible.js";

export interface GraphViewOptions {
  onSelect?: (id: string | null) => void;  // a node (not a group) was clicked
  onQuery?: (q: string) => void;
  height?: number;
  tools?: HTMLElement[];  // extra toolbar controls (e.g. "debug")
  onView?: (k: number, tx: number, ty: number) => void;  // the user panned or zoomed (a compare view links two panes)
  onDraw?: (els: Map<string, SVGGElement>) => void;  // the boxes were drawn anew (an overlay paints them: overlay.ts)
  onDetail?: (pane: HTMLElement, id: string | null) => void;  // the detail pane was filled for `id` (overlay.ts adds to it)
  firstScale?: number;  // the first view's least scale (firstview.ts): READABLE; LINKED_READABLE with onView
}

export class GraphView {
  readonly root = h("div", "fl-graph");
  tree: GroupTree;
  byLane = false;
  readonly detail = h("div", "fl-detail");
  readonly toolbar = h("div", "fl-toolbar");
  readonly canvas = h("div", "fl-canvas");
  layout: Layout | null = null;
  selected: string | null = null;
  private readonly svg = s("svg", { class: "fl-svg" });
  private readonly viewport = s("g", { class: "fl-viewport" });
  private readonly minimap = s("svg", { class: "fl-minimap" });
  private mmView: SVGRectElement | null = null;
  private readonly status = h("div", "fl-status");
  private readonly search = h("input", "fl-search");
  private readonly count = h("span", "fl-count");
  private readonly cache = new Map<string, Layout>();
  private readonly overlays = new EdgeOverlays(() => this.applyMarks());  // many dashed edges: the selection's only
  private els = new Map<string, SVGGElement>();
  private marks = new Map<string, Set<string>>();
  private matches: string[] = [];
  private matchAt = -1;
  private k = 1; private tx = 0; private ty = 0;
  private fitted = false;
  private regionView = false;  // the first view shows a readable part of a graph too big to fit readably
  private touched = false;  // the user panned or zoomed: do not refit on resize
  private pending: Promise<void> = Promise.resolve();
  private busy = 0;  // layouts and focus moves under way; the canvas says `data-layout="idle"` when none is
  private readonly resize: ResizeObserver | null;
  ready: Promise<void>;

  constructor(readonly graph: Graph, readonly opts: GraphViewOptions = {}) {
    this.tree = new GroupTree(graph);
    this.tree.bound(MAX_VISIBLE);
    this.search.type = "search";
    this.search.placeholder = "search names (Enter: next)";
    this.search.addEventListener("input", () => { this.setQuery(this.search.value, false); this.opts.onQuery?.(this.search.value); });
    this.search.addEventListener("keydown", (ev) => { if (ev.key === "Enter") void this.nextMatch(ev.shiftKey ? -1 : 1); });
    const full = button("full screen", "full screen (again, or Esc, to leave)", () => this.toggleFull());
    this.toolbar.append(this.search, this.count,
      button("◀", "previous match", () => void this.nextMatch(-1)), button("▶", "next match", () => void this.nextMatch(1)),
      button("−", "zoom out", () => this.zoomBy(1 / 1.25)), button("+", "zoom in", () => this.zoomBy(1.25)),
      button("fit", "fit the whole graph in view", () => this.fit(true)),
      button("collapse all", "collapse every group", () => void this.collapseAll()), full, this.overlays.toggle, ...(opts.tools ?? []));
    if (graph.lanes.length > 1) {
      const lanes = button("by lane", "group the boxes by device/thread lane (again: by job)", () => void this.toggleLanes());
      lanes.classList.add("fl-lanes-toggle");
      this.toolbar.append(lanes);
      this.toolbar.append(laneLegend(graph.lanes));
    }
    // Diff marks (a Plan diff's added/removed/changed, and "out-" ones for a changed register) are node classes; as
    // marks they also colour the collapsed group that holds a marked node, so a change is never hidden in a group.
    for (const m of DIFF_MARKS) {
      // an outline says "its register changed" only where the box itself is not marked the same way
      const ids = graph.nodes.filter((n) => n.classes?.includes(m) && !(m.startsWith("out-") && n.classes.includes(m.slice(4)))).map((n) => n.id);
      if (ids.length) this.marks.set(`c-${m}`, new Set(ids));
    }
    const legend = diffLegend([...this.marks.keys()].map((c) => c.slice(2)));
    if (legend) this.toolbar.append(legend);
    this.svg.append(defs(), this.viewport);
    this.canvas.append(this.svg, this.minimap, this.status);
    this.canvas.style.height = `${opts.height ?? 520}px`;
    const body = h("div", "fl-body");
    body.append(this.canvas, this.detail);
    this.root.append(this.toolbar, body);
    renderDetail(this.detail, graph, null);
    this.bindPointer();
    // Keys on the canvas: + and - zoom, 0 or f fits, / goes to the search box, Esc leaves full screen.
    this.canvas.tabIndex = 0;
    this.canvas.title = "drag: pan · wheel, + and -: zoom · 0 or f: fit · /: search · click a group box: expand";
    this.canvas.addEventListener("keydown", (ev) => {
      const act: Record<string, () => void> = { "+": () => this.zoomBy(1.25), "=": () => this.zoomBy(1.25),
        "-": () => this.zoomBy(1 / 1.25), "0": () => this.fit(true), f: () => this.fit(true), "/": () => this.search.focus() };
      const f = act[ev.key];
      if (f) { ev.preventDefault(); ev.stopPropagation(); f(); }
    });
    this.root.addEventListener("keydown", (ev) => { if (ev.key === "Escape") this.root.classList.remove("fl-full"); });
    this.resize = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => {
      if (this.layout && (!this.fitted || !this.touched)) this.fit();
    });
    this.resize?.observe(this.canvas);
    this.ready = this.relayout();
  }

  destroy(): void { this.resize?.disconnect(); }
  /** Lay out the visible graph (cached per collapse state) and redraw; calls are serialized. */
  relayout(): Promise<void> {
    return this.settling(this.chainLayout());
  }

  /** Mark the canvas busy while `work` runs, so a reader (a person, a browser test) can tell a view that settled. */
  private async settling(work: Promise<void>): Promise<void> {
    this.busy++;
    this.canvas.dataset.layout = "busy";
    try { await work; } finally { if (--this.busy === 0) this.canvas.dataset.layout = "idle"; }
  }

  private chainLayout(): Promise<void> {
    this.pending = this.pending.then(async () => {
      // before a first view's layout, collapse what could not fit readably anyway (firstview.ts, by the box count)
      const W = this.canvas.clientWidth, H = this.canvas.clientHeight;
      if (!this.fitted && W && H) readableFirstView(this.tree, W, H, this.firstMin(), this.firstMin() < READABLE);
      const v = this.tree.visible();
      let lay = this.cache.get(v.key);
      if (!lay) {
        this.status.textContent = `laying out ${v.nodes.length} boxes…`;
        lay = await layoutAsync(v);
        this.cache.set(v.key, lay);
      }
      this.status.textContent = "";
      this.layout = lay;
      this.draw();
      if (!this.fitted) this.fit();
      else this.apply();
    }).catch((e) => { this.status.textContent = `layout failed: ${String(e)}`; });
    return this.pending;
  }

  private draw(): void {
    const lay = this.layout!;
    this.els = drawLayout(this.viewport, lay, this.graph.lanes);
    this.mmView = drawMinimap(this.minimap, lay);
    this.opts.onDraw?.(this.els);
    const b = lay.bounds;
    this.minimap.style.height = `${Math.round(Math.max(50, Math.min(160, (170 * b.h) / Math.max(1, b.w))))}px`;
    this.applyMarks();
  }

  private firstMin(): number { return this.opts.firstScale ?? (this.opts.onView ? LINKED_READABLE : READABLE); }

  /** The first view (firstview.ts): collapse until readable; a view that still is not starts at the kept job's top. */
  private firstView(W: number, H: number, min: number): string | null {
    const layoutOf = (v: Visible): Layout => {
      const lay = this.cache.get(v.key) ?? layoutSync(v);
      this.cache.set(v.key, lay);
      return lay;
    };
    const first = readableFirstView(this.tree, W, H, min, min < READABLE, layoutOf);
    this.layout = first.layout ?? this.layout;
    if (first.changed) this.draw();
    return first.anchor;
  }

  // ---- view transform ------------------------------------------------------------------------------------------
  private apply(): void {
    this.viewport.setAttribute("transform", `translate(${this.tx},${this.ty}) scale(${this.k})`);
    if (this.mmView) {
      const W = this.canvas.clientWidth || 1, H = this.canvas.clientHeight || 1;
      this.mmView.setAttribute("x", String(-this.tx / this.k));
      this.mmView.setAttribute("y", String(-this.ty / this.k));
      this.mmView.setAttribute("width", String(W / this.k));
      this.mmView.setAttribute("height", String(H / this.k));
      // The minimap only helps when part of the graph is out of view.
      const b = this.layout?.bounds;
      const all = !b || (b.x * this.k + this.tx >= -2 && b.y * this.k + this.ty >= -2
        && (b.x + b.w) * this.k + this.tx <= W + 2 && (b.y + b.h) * this.k + this.ty <= H + 2);
      this.minimap.style.display = all ? "none" : "";
    }
  }

  /**
   * Fit the whole visible graph into the canvas (never magnified past 1.5x). The first view (and its refits on
   * resize until the user moves it) is readable instead (firstview.ts): it may collapse groups, or centre the kept
   * job at a readable scale (from its top left where it is bigger) with the minimap for the rest; `whole` (the fit
   * button) always fits.
   */
  fit(whole = false): void {
    if (!this.layout) return;
    const W = this.canvas.clientWidth, H = this.canvas.clientHeight;
    if (!W || !H) return;  // not on the page yet: the ResizeObserver fits once it is
    const first = !whole && (!this.fitted || (this.regionView && !this.touched));
    const min = this.firstMin();
    const anchor = first ? this.firstView(W, H, min) : null;
    const b = this.layout.bounds;
    this.k = Math.max(0.02, Math.min(1.5, fitScale(this.layout, W, H)));
    this.tx = (W - b.w * this.k) / 2 - b.x * this.k;
    this.ty = (H - b.h * this.k) / 2 - b.y * this.k;
    this.regionView = first && this.k < min;
    if (this.regionView) {
      const a = (anchor && (this.layout.clusters.find((c) => c.id === anchor) ?? this.layout.nodes.get(anchor))) || b;
      this.k = min;
      this.tx = a.w * this.k <= W ? (W - a.w * this.k) / 2 - a.x * this.k : 8 - a.x * this.k;
      this.ty = a.h * this.k <= H ? (H - a.h * this.k) / 2 - a.y * this.k : 8 - a.y * this.k;
    }
    this.fitted = true;
    this.touched = false;
    this.apply();
  }

  /** Open the groups holding `ids` and fit the view to their boxes (a hang's cycle: stuck.ts). */
  fitTo(ids: string[]): Promise<void> {
    return this.settling(this.fitToNow(ids));
  }

  private async fitToNow(ids: string[]): Promise<void> {
    const known = ids.filter((id) => this.tree.nodes.has(id));
    let opened = false;
    for (const id of known) opened = this.tree.reveal(id) || opened;
    if (opened) {
      this.tree.bound(MAX_VISIBLE, known[0]);
      await this.relayout();
    }
    await this.pending;
    const boxes = known.map((id) => this.layout?.nodes.get(this.tree.representative(id))).filter((b) => b !== undefined);
    const W = this.canvas.clientWidth, H = this.canvas.clientHeight;
    if (!boxes.length || !W || !H) return;
    const pad = 40;
    const x0 = Math.min(...boxes.map((b) => b.x)) - pad, y0 = Math.min(...boxes.map((b) => b.y)) - pad;
    const w = Math.max(...boxes.map((b) => b.x + b.w)) + pad - x0, hh = Math.max(...boxes.map((b) => b.y + b.h)) + pad - y0;
    this.k = Math.max(0.02, Math.min(1.5, W / w, H / hh));
    this.tx = (W - w * this.k) / 2 - x0 * this.k;
    this.ty = (H - hh * this.k) / 2 - y0 * this.k;
    this.fitted = true;
    this.touched = true;
    this.apply();
  }

  /** Show the graph at this scale and offset (a linked pane's); does not tell onView. */
  setView(k: number, tx: number, ty: number): void {
    this.k = k; this.tx = tx; this.ty = ty;
    this.touched = true;
    this.apply();
  }

  private moved(): void { this.opts.onView?.(this.k, this.tx, this.ty); }

  zoomBy(f: number, cx?: number, cy?: number): void {
    const W = this.canvas.clientWidth, H = this.canvas.clientHeight;
    const px = cx ?? W / 2, py = cy ?? H / 2;
    const k = Math.max(0.02, Math.min(8, this.k * f));
    this.tx = px - ((px - this.tx) * k) / this.k;
    this.ty = py - ((py - this.ty) * k) / this.k;
    this.k = k;
    this.touched = true;
    this.apply();
    this.moved();
  }

  /** Centre a node or group in the canvas; zoom in to a readable scale when the label would be tiny. */
  centerOn(id: string): void {
    const b = this.layout?.nodes.get(id) ?? this.layout?.clusters.find((c) => c.id === id);
    if (!b) return;
    const W = this.canvas.clientWidth, H = this.canvas.clientHeight;
    if (this.k < 0.6) this.k = Math.min(1, Math.max(0.6, Math.min(W / (b.w * 3), H / (b.h * 3))));
    this.tx = W / 2 - (b.x + b.w / 2) * this.k;
    this.ty = H / 2 - (b.y + b.h / 2) * this.k;
    this.touched = true;
    this.apply();
  }

  /** Centre `id` only when it is outside (or at the edge of) the canvas. */
  scrollIntoView(id: string): void {
    const b = this.layout?.nodes.get(id);
    if (!b) return;
    const W = this.canvas.clientWidth, H = this.canvas.clientHeight;
    const x0 = b.x * this.k + this.tx, y0 = b.y * this.k + this.ty;
    if (x0 < 8 || y0 < 8 || x0 + b.w * this.k > W - 8 || y0 + b.h * this.k > H - 8 || this.k < 0.35) this.centerOn(id);
  }

  private toggleFull(): void {
    this.root.classList.toggle("fl-full");
    requestAnimationFrame(() => this.fit());
  }

  // ---- pointer: drag pans, a click without a drag selects or toggles ----------------------------------------------
  private bindPointer(): void {
    let start: { x: number; y: number; tx: number; ty: number; target: Element | null; moved: boolean; id: number } | null = null;
    this.svg.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      this.canvas.focus({ preventScroll: true });
      start = { x: ev.clientX, y: ev.clientY, tx: this.tx, ty: this.ty, target: ev.target as Element, moved: false, id: ev.pointerId };
    });
    this.svg.addEventListener("pointermove", (ev) => {
      if (!start) return;
      const dx = ev.clientX - start.x, dy = ev.clientY - start.y;
      if (!start.moved && Math.hypot(dx, dy) < 4) return;
      if (!start.moved) {
        start.moved = true;
        try { this.svg.setPointerCapture(start.id); } catch { /* the pointer may already be gone */ }
      }
      this.tx = start.tx + dx; this.ty = start.ty + dy;
      this.touched = true;
      this.apply();
      this.moved();
    });
    const end = (): void => {
      const st = start;
      start = null;
      if (st && !st.moved) void this.clickAt(st.target);
    };
    this.svg.addEventListener("pointerup", end);
    this.svg.addEventListener("pointercancel", () => { start = null; });
    this.svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = this.svg.getBoundingClientRect();
      this.zoomBy(Math.exp(-ev.deltaY * (ev.deltaMode === 1 ? 0.05 : 0.0015)), ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
    const mmMove = (ev: PointerEvent): void => {
      if (!this.layout) return;
      const r = this.minimap.getBoundingClientRect(), b = this.layout.bounds;
      const sc = Math.max(b.w / r.width, b.h / r.height);  // viewBox is fitted with preserveAspectRatio meet
      const x = b.x + b.w / 2 + (ev.clientX - r.left - r.width / 2) * sc, y = b.y + b.h / 2 + (ev.clientY - r.top - r.height / 2) * sc;
      this.tx = this.canvas.clientWidth / 2 - x * this.k;
      this.ty = this.canvas.clientHeight / 2 - y * this.k;
      this.touched = true;
      this.apply();
      this.moved();
    };
    this.minimap.addEventListener("pointerdown", (ev) => { ev.stopPropagation(); mmMove(ev); });
    this.minimap.addEventListener("pointermove", (ev) => { if (ev.buttons & 1) mmMove(ev); });
  }

  private async clickAt(target: Element | null): Promise<void> {
    const node = target?.closest("[data-id]");
    const cluster = target?.closest("[data-group]");
    if (node) {
      const id = node.getAttribute("data-id")!;
      if (this.tree.groups.has(id)) await this.toggleGroup(id);
      else this.select(id);
    } else if (cluster && (target?.classList.contains("fl-cluster-head") || target?.classList.contains("fl-cluster-label"))) {
      await this.toggleGroup(cluster.getAttribute("data-group")!);
    }
  }

  // ---- groups ---------------------------------------------------------------------------------------------------
  async toggleGroup(id: string): Promise<void> {
    const opening = this.tree.collapsed.has(id);
    this.tree.toggle(id);
    if (opening) this.tree.bound(MAX_VISIBLE, id);
    await this.relayout();
    this.showBox(id);
  }

  /**
   * Bring a node or group into view after it changed: fit it when it fits at a readable scale, otherwise show its
   * top at that scale (a long expanded chain starts where it starts).
   */
  showBox(id: string, minK = 0.5): void {
    const b = this.layout?.nodes.get(id) ?? this.layout?.clusters.find((c) => c.id === id);
    const W = this.canvas.clientWidth, H = this.canvas.clientHeight;
    if (!b || !W || !H) return;
    const fitK = Math.min(1.5, Math.min((W - 16) / b.w, (H - 16) / b.h));
    this.k = Math.max(fitK, Math.min(minK, 1.5));
    this.tx = b.w * this.k <= W ? (W - b.w * this.k) / 2 - b.x * this.k : 8 - b.x * this.k;
    this.ty = b.h * this.k <= H ? (H - b.h * this.k) / 2 - b.y * this.k : 8 - b.y * this.k;
    this.touched = true;
    this.apply();
  }

  async collapseAll(): Promise<void> {
    for (const g of this.tree.groups.values()) if (g.parent === null) this.tree.collapsed.add(g.id);
    await this.relayout();
    this.fit(true);
  }

  /** Switch between the payload's grouping and lanes as the outer groups; the selection and marks carry over. */
  async toggleLanes(): Promise<void> {
    this.byLane = !this.byLane;
    this.tree = new GroupTree(this.byLane ? groupByLane(this.graph) : this.graph);
    this.tree.bound(MAX_VISIBLE);
    this.cache.clear();
    this.fitted = false;
    this.toolbar.querySelector(".fl-lanes-toggle")!.textContent = this.byLane ? "by job" : "by lane";
    await this.relayout();
  }

  /** Select a node: highlight it, fill the detail pane and tell the owner. */
  select(id: string | null, notify = true): void {
    this.selected = id;
    this.mark("sel", id ? [id] : []);
    renderDetail(this.detail, this.graph, id, undefined, (target) => void this.focus(target));
    this.opts.onDetail?.(this.detail, id);
    if (notify) this.opts.onSelect?.(id);
  }

  /** Reveal (expand its groups), select and centre a node. */
  focus(id: string, select = true): Promise<void> {
    return this.settling(this.focusNow(id, select));
  }

  private async focusNow(id: string, select: boolean): Promise<void> {
    if (!this.tree.nodes.has(id) && !this.tree.groups.has(id)) return;
    if (this.tree.reveal(id)) {
      this.tree.bound(MAX_VISIBLE, id);
      await this.relayout();
    }
    await this.pending;
    if (select) this.select(id, false);
    this.centerOn(this.tree.representative(id));
  }

  // ---- marks (selection, search matches, the debugger's next actor, a run's acting node) -------------------------
  /** Give `cls` to these ids; a hidden id marks the collapsed group that holds it. */
  mark(cls: string, ids: string[]): void {
    this.marks.set(cls, new Set(ids));
    this.applyMarks();
  }

  private applyMarks(): void {
    this.overlays.apply(this.viewport, this.selected ? this.tree.representative(this.selected) : null);
    for (const el of this.els.values()) for (const cls of this.marks.keys()) el.classList.remove(cls);
    for (const [cls, ids] of this.marks) {
      for (const id of ids) {
        if (!this.tree.nodes.has(id) && !this.tree.groups.has(id)) continue;
        this.els.get(this.tree.representative(id))?.classList.add(cls);
      }
    }
  }

  // ---- search -----------------------------------------------------------------------------------------------------
  setQuery(q: string, updateInput = true): void {
    if (updateInput && this.search.value !== q) this.search.value = q;
    const needle = q.trim().toLowerCase();
    this.matches = needle ? [...this.tree.nodes.values()].filter((n) => n.label.toLowerCase().includes(needle)).map((n) => n.id) : [];
    this.matchAt = -1;
    this.count.textContent = needle ? `${this.matches.length} match${this.matches.length === 1 ? "" : "es"}` : "";
    this.mark("match", this.matches);
    this.mark("current", []);
  }

  async nextMatch(dir: 1 | -1): Promise<void> {
    if (!this.matches.length) return;
    this.matchAt = (this.matchAt + dir + this.matches.length) % this.matches.length;
    const id = this.matches[this.matchAt];
    this.count.textContent = `${this.matchAt + 1} of ${this.matches.length}`;
    await this.focus(id, false);
    this.mark("current", [id]);
  }
}
