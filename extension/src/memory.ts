// The memory view: each register's lifetime (first to last act) as a bar, grouped by memory block, with each
// block's occupancy over the acts; a cursor marks the current act.
import { bytes, h, s } from "./dom.js";
import type { Memory } from "./payload.js";

const ROW = 14, LABEL_W = 150, MAX_ROWS = 600;

export class MemoryView {
  readonly root = h("div", "fl-panel fl-memory");
  private readonly info = h("div", "fl-muted");
  private readonly box = h("div", "fl-mem");
  private cursor: SVGLineElement | null = null;
  private bars: { el: SVGRectElement; first: number; last: number }[] = [];
  private occText: { el: SVGTextElement; block: string; size: number }[] = [];
  private step = 8;
  private memory: Memory = { blocks: [], lifetimes: [] };

  constructor() {
    this.root.append(h("h4", "", "memory: register lifetimes and block occupancy over the acts"), this.info, this.box);
  }

  set(memory: Memory, nActs: number): void {
    this.memory = memory;
    this.box.replaceChildren();
    this.bars = []; this.occText = [];
    const acts = Math.max(1, nActs, ...memory.lifetimes.map((l) => l.last_act + 1));
    if (!memory.lifetimes.length) {
      this.info.textContent = "no memory record in this payload";
      return;
    }
    this.step = Math.max(3, Math.min(40, 640 / acts));
    const byBlock = new Map<string, typeof memory.lifetimes>();
    for (const l of memory.lifetimes) (byBlock.get(l.block) ?? byBlock.set(l.block, []).get(l.block)!).push(l);
    const blocks = memory.blocks.length ? memory.blocks : [...byBlock.keys()].map((id) => ({ id, size: 0, mem_case: "" }));
    let rows = 0;
    for (const b of blocks) rows += 2 + Math.min(byBlock.get(b.id)?.length ?? 0, MAX_ROWS);
    const W = LABEL_W + acts * this.step + 10, H = 18 + rows * ROW;
    const svg = s("svg", { width: W, height: H });
    for (let a = 0; a < acts; a += Math.max(1, Math.ceil(acts / 12))) {
      svg.append(s("text", { x: LABEL_W + a * this.step, y: 11 }, String(a)));
    }
    let y = 18;
    for (const b of blocks) {
      const ls = (byBlock.get(b.id) ?? []).slice().sort((p, q) => p.offset - q.offset || p.first_act - q.first_act);
      svg.append(s("text", { x: 2, y: y + 10, "font-weight": "600" }, `${b.id} ${b.mem_case} ${b.size ? bytes(b.size) : ""}`.trim()));
      // Occupancy: live bytes per act as a fraction of the block, drawn as columns two rows tall.
      const size = b.size || Math.max(1, ...ls.map((l) => l.offset + l.size));
      for (let a = 0; a < acts; a++) {
        const live = ls.reduce((sum, l) => sum + (l.first_act <= a && a <= l.last_act ? l.size : 0), 0);
        const f = Math.min(1, live / size);
        if (f > 0) svg.append(s("rect", { class: "occ", x: LABEL_W + a * this.step, y: y + 2 * ROW - f * 2 * ROW, width: this.step - 0.5, height: f * 2 * ROW }));
      }
      const t = s("text", { x: 2, y: y + ROW + 10, class: "fl-occ" });
      this.occText.push({ el: t, block: b.id, size });
      svg.append(t);
      y += 2 * ROW;
      for (const l of ls.slice(0, MAX_ROWS)) {
        svg.append(s("text", { x: 10, y: y + 10 }, `${l.regst} @${l.offset}`));
        const bar = s("rect", { class: "bar", x: LABEL_W + l.first_act * this.step, y: y + 2, height: ROW - 4,
          width: Math.max(2, (l.last_act - l.first_act + 1) * this.step - 1) });
        bar.append(s("title", {}, `${l.regst} in ${l.block} at offset ${l.offset}, ${bytes(l.size)}, acts ${l.first_act}–${l.last_act}`));
        this.bars.push({ el: bar, first: l.first_act, last: l.last_act });
        svg.append(bar);
        y += ROW;
      }
      if (ls.length > MAX_ROWS) {
        svg.append(s("text", { x: 10, y: y + 10 }, `… and ${ls.length - MAX_ROWS} more registers`));
        y += ROW;
      }
    }
    this.cursor = s("line", { class: "cursor", y1: 14, y2: H });
    svg.append(this.cursor);
    this.box.append(svg);
    this.info.textContent = `${memory.lifetimes.length} registers in ${blocks.length} blocks over ${acts} acts`;
  }

  /** Move the cursor to act `a` and mark the registers live there. */
  at(a: number): void {
    if (!this.cursor) return;
    const x = LABEL_W + (a + 0.5) * this.step;
    this.cursor.setAttribute("x1", String(x));
    this.cursor.setAttribute("x2", String(x));
    for (const b of this.bars) b.el.classList.toggle("live", b.first <= a && a <= b.last);
    for (const o of this.occText) {
      const live = this.memory.lifetimes.filter((l) => l.block === o.block && l.first_act <= a && a <= l.last_act).reduce((x2, l) => x2 + l.size, 0);
      o.el.textContent = `  ${bytes(live)} live at act ${a} (${Math.round((100 * live) / o.size)}%)`;
    }
  }
}
