// The memory view: each register's lifetime (first to last act) as a bar, grouped by memory block, with each
// block's occupancy over the acts; a cursor marks the current act.
//
// The debugger sets a new memory record on every step (a lifetime grew, one began, the oldest left the window), so
// `set` updates the chart in place instead of drawing it again: each lifetime keeps its label and bar (keyed by
// register, offset and first act), a bar's attributes change only when its lifetime or its row moved, and the act
// axis is a scale on the bars' group (bars are in acts), so the axis shrinking as acts accrue touches one attribute,
// not every bar. A block's occupancy is one path. The DOM after any sequence of `set`s is the one a fresh view draws
// for the last record (extension/test/memory.test.ts).
import { bytes, h, s } from "./dom.js";
import type { Lifetime, MemBlock, Memory } from "./payload.js";

const ROW = 14, LABEL_W = 150, MAX_ROWS = 600;

interface Bar { key: string; lt: Lifetime; label: SVGTextElement; bar: SVGRectElement; title: SVGTitleElement; row: number }
interface Block {
  id: string; g: SVGGElement; head: SVGTextElement; occ: SVGPathElement; occText: SVGTextElement;
  labels: SVGGElement; bars: SVGGElement; more: SVGTextElement | null; size: number; y: number;
}

const keyOf = (l: Lifetime): string => `${l.block}|${l.offset}|${l.first_act}|${l.regst}`;

/** Set an attribute only when it differs (what makes an unchanged bar cost nothing). */
function attr(e: Element, name: string, value: string | number): void {
  const v = String(value);
  if (e.getAttribute(name) !== v) e.setAttribute(name, v);
}

/** Make `parent`'s children exactly `want`, in order, moving or removing only what is out of place. */
function order(parent: Element, want: Element[]): void {
  let cur = parent.firstElementChild;
  for (const el of want) {
    if (cur === el) cur = cur.nextElementSibling;
    else parent.insertBefore(el, cur);
  }
  while (cur) {
    const next = cur.nextElementSibling;
    cur.remove();
    cur = next;
  }
}

export class MemoryView {
  readonly root = h("div", "fl-panel fl-memory");
  private readonly info = h("div", "fl-muted");
  private readonly box = h("div", "fl-mem");
  private svg: SVGSVGElement | null = null;
  private ticks: SVGGElement | null = null;
  private cursor: SVGLineElement | null = null;
  private blocks = new Map<string, Block>();
  private byKey = new Map<string, Bar>();
  private step = 8;
  private acts = 0;
  private blockSig = "";
  private memory: Memory = { blocks: [], lifetimes: [] };

  constructor() {
    this.root.append(h("h4", "", "memory: register lifetimes and block occupancy over the acts"), this.info, this.box);
  }

  set(memory: Memory, nActs: number): void {
    this.memory = memory;
    if (!memory.lifetimes.length) {
      this.reset();
      this.info.textContent = "no memory record in this payload";
      return;
    }
    const acts = Math.max(1, nActs, ...memory.lifetimes.map((l) => l.last_act + 1));
    const step = Math.max(3, Math.min(40, 640 / acts));
    const byBlock = new Map<string, Lifetime[]>();
    for (const l of memory.lifetimes) (byBlock.get(l.block) ?? byBlock.set(l.block, []).get(l.block)!).push(l);
    const blocks: MemBlock[] = memory.blocks.length ? memory.blocks : [...byBlock.keys()].map((id) => ({ id, size: 0, mem_case: "" }));
    const heads = blocks.map((b) => `${b.id} ${b.mem_case} ${b.size ? bytes(b.size) : ""}`.trim());
    const sig = blocks.map((b, i) => `${b.id}\u0000${heads[i]}`).join("\u0001");
    if (!this.svg || sig !== this.blockSig) {
      this.reset();  // another Plan's blocks (or the first record): start from an empty chart
      this.svg = s("svg");
      this.ticks = s("g", { class: "fl-mem-ticks" });
      this.svg.append(this.ticks);
      blocks.forEach((b, i) => this.blocks.set(b.id, this.newBlock(b.id, heads[i])));
      this.cursor = s("line", { class: "cursor", y1: 14 });
      this.svg.append(...[...this.blocks.values()].map((b) => b.g), this.cursor);
      this.box.append(this.svg);
      this.blockSig = sig;
    }
    if (acts !== this.acts || step !== this.step) this.drawTicks(acts, step);
    this.acts = acts; this.step = step;
    const seen = new Set<string>();
    let y = 18;
    for (const b of blocks) {
      const blk = this.blocks.get(b.id)!;
      const ls = (byBlock.get(b.id) ?? []).slice().sort((p, q) => p.offset - q.offset || p.first_act - q.first_act);
      blk.size = b.size || Math.max(1, ...ls.map((l) => l.offset + l.size));
      attr(blk.g, "transform", `translate(0,${y})`);
      blk.y = y;
      attr(blk.occ, "d", occupancyPath(ls, acts, step, blk.size));
      attr(blk.bars, "transform", `translate(${LABEL_W},0) scale(${step},1)`);
      const shown = ls.slice(0, MAX_ROWS).map((l, row) => this.bar(l, row, seen));
      order(blk.labels, shown.map((r) => r.label));
      order(blk.bars, shown.map((r) => r.bar));
      let rows = 2 + shown.length;
      if (ls.length > MAX_ROWS) {
        blk.more ??= s("text", { x: 10, class: "fl-mem-more" });
        attr(blk.more, "y", 2 * ROW + shown.length * ROW + 10);
        blk.more.textContent = `… and ${ls.length - MAX_ROWS} more registers`;
        if (!blk.more.parentNode) blk.g.append(blk.more);
        rows += 1;
      } else if (blk.more) {
        blk.more.remove();
        blk.more = null;
      }
      y += rows * ROW;
    }
    for (const key of [...this.byKey.keys()]) if (!seen.has(key)) this.byKey.delete(key);  // order() removed their elements
    attr(this.svg!, "width", LABEL_W + acts * step + 10);
    attr(this.svg!, "height", y);
    attr(this.cursor!, "y2", y);
    this.info.textContent = `${memory.lifetimes.length} registers in ${blocks.length} blocks over ${acts} acts`;
  }

  /** Move the cursor to act `a` and mark the registers live there. */
  at(a: number): void {
    if (!this.cursor) return;
    const x = LABEL_W + (a + 0.5) * this.step;
    this.cursor.setAttribute("x1", String(x));
    this.cursor.setAttribute("x2", String(x));
    for (const r of this.byKey.values()) {
      const live = r.lt.first_act <= a && a <= r.lt.last_act;
      if (live !== r.bar.classList.contains("live")) r.bar.classList.toggle("live", live);
    }
    const live = new Map<string, number>();
    for (const l of this.memory.lifetimes) if (l.first_act <= a && a <= l.last_act) live.set(l.block, (live.get(l.block) ?? 0) + l.size);
    for (const b of this.blocks.values()) {
      const n = live.get(b.id) ?? 0;
      const text = `  ${bytes(n)} live at act ${a} (${Math.round((100 * n) / b.size)}%)`;
      if (b.occText.textContent !== text) b.occText.textContent = text;
    }
  }

  private reset(): void {
    this.box.replaceChildren();
    this.svg = this.ticks = this.cursor = null;
    this.blocks.clear();
    this.byKey.clear();
    this.acts = 0;
    this.blockSig = "";
  }

  private newBlock(id: string, headText: string): Block {
    const g = s("g", { class: "fl-mem-block" });
    const head = s("text", { x: 2, y: 10, "font-weight": "600" }, headText);
    const occ = s("path", { class: "occ" });  // live bytes per act as a fraction of the block, two rows tall
    const occText = s("text", { x: 2, y: ROW + 10, class: "fl-occ" });
    const labels = s("g", { class: "fl-mem-labels" }), bars = s("g", { class: "fl-mem-bars" });
    g.append(head, occ, occText, labels, bars);
    return { id, g, head, occ, occText, labels, bars, more: null, size: 1, y: 0 };
  }

  private drawTicks(acts: number, step: number): void {
    const ticks = [];
    for (let a = 0; a < acts; a += Math.max(1, Math.ceil(acts / 12))) ticks.push(s("text", { x: LABEL_W + a * step, y: 11 }, String(a)));
    this.ticks!.replaceChildren(...ticks);
  }

  /** The label and bar of lifetime `l` in row `row` of its block: kept, and changed only where `l` or its row did. */
  private bar(l: Lifetime, row: number, seen: Set<string>): Bar {
    let key = keyOf(l);
    while (seen.has(key)) key += "'";  // (two lifetimes alike in all four: each keeps its own elements all the same)
    seen.add(key);
    let r = this.byKey.get(key);
    const y = 2 * ROW + row * ROW;
    if (!r) {
      const label = s("text", { x: 10, y: y + 10 }, `${l.regst} @${l.offset}`);
      const bar = s("rect", { class: "bar", x: l.first_act, y: y + 2, height: ROW - 4, width: l.last_act - l.first_act + 1 });
      const title = s("title", {}, tip(l));
      bar.append(title);
      r = { key, lt: l, label, bar, title, row };
      this.byKey.set(key, r);
      return r;
    }
    if (r.row !== row) {
      attr(r.label, "y", y + 10);
      attr(r.bar, "y", y + 2);
      r.row = row;
    }
    if (r.lt.last_act !== l.last_act || r.lt.size !== l.size) {
      attr(r.bar, "width", l.last_act - l.first_act + 1);
      r.title.textContent = tip(l);
    }
    r.lt = l;
    return r;
  }
}

function tip(l: Lifetime): string {
  return `${l.regst} in ${l.block} at offset ${l.offset}, ${bytes(l.size)}, acts ${l.first_act}–${l.last_act}`;
}

/** One path of columns, one per act with live bytes: its height the live fraction of the block, two rows tall. */
function occupancyPath(ls: Lifetime[], acts: number, step: number, size: number): string {
  const delta = new Float64Array(acts + 1);  // live bytes change at each act: +size at first, -size after last
  for (const l of ls) {
    delta[Math.min(acts, l.first_act)] += l.size;
    delta[Math.min(acts, l.last_act + 1)] -= l.size;
  }
  const parts: string[] = [];
  let live = 0;
  const w = (step - 0.5).toFixed(2);
  for (let a = 0; a < acts; a++) {
    live += delta[a];
    const f = Math.min(1, live / size);
    if (f > 0) parts.push(`M${(LABEL_W + a * step).toFixed(2)},${(2 * ROW - f * 2 * ROW).toFixed(2)}h${w}v${(f * 2 * ROW).toFixed(2)}h-${w}z`);
  }
  return parts.join("");
}
