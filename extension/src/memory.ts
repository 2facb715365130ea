// The memory view: each register's lifetime (first to last act) as a bar, grouped by memory block, with each
// block's occupancy over the acts; a cursor marks the current act.
//
// The debugger sets a new memory record on every step (a lifetime grew, one began, the oldest left the window), so
// `set` updates the chart in place instead of drawing it again: each lifetime keeps its label and bar (keyed by
// register, offset and first act), a bar's attributes change only when its lifetime or its row moved, and the act
// axis is a scale on the bars' group (bars are in acts), so the axis shrinking as acts accrue touches one attribute,
// not every bar. A block's occupancy is one path. The DOM after any sequence of `set`s is the one a fresh view draws
// for the last record (extension/test/memory.test.ts).
//
// What a person reads: each row is named by its blob (the register's first lbn, the register id only in the hover); a
// "total" row on top draws the live bytes of all blocks over the acts as one line; blocks sort by id, size or peak;
// a block shows its first FOLD_ROWS registers until its "… more" line is clicked. The chart is as tall as its rows
// (no scroll box of its own inside the notebook's scroll); only a run too long for the width scrolls sideways.
import { bytes, h, s } from "./dom.js";
import type { Lifetime, MemBlock, Memory } from "./payload.js";

const ROW = 14, LABEL_W = 210, MAX_ROWS = 600, FOLD_ROWS = 40, TOTAL_ROWS = 3, LABEL_CHARS = 34;
export type MemSort = "id" | "size" | "peak";

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
  private nActs = 0;
  private sortBy: MemSort = "id";
  private readonly expanded = new Set<string>();
  private total: { g: SVGGElement; line: SVGPathElement; text: SVGTextElement; live: Float64Array } | null = null;
  readonly sort = h("select", "fl-mem-sort");

  constructor() {
    for (const [v, label] of [["id", "block id"], ["size", "size"], ["peak", "peak live bytes"]]) {
      const o = h("option", "", label);
      o.value = v;
      this.sort.append(o);
    }
    this.sort.title = "the order of the memory blocks";
    this.sort.addEventListener("change", () => this.sortBlocks(this.sort.value as MemSort));
    const row = h("div", "fl-row");
    row.append(this.info, h("span", "fl-muted", "sort blocks by"), this.sort);
    this.root.append(h("h4", "", "memory: register lifetimes and block occupancy over the acts"), row, this.box);
  }

  /** Order the blocks by id (the Plan's order), size, or peak live bytes (largest first). */
  sortBlocks(by: MemSort): void {
    this.sortBy = by;
    this.sort.value = by;
    if (this.memory.lifetimes.length) {
      const a = this.cursorAct;
      this.set(this.memory, this.nActs);
      if (a !== null) this.at(a);
    }
  }

  private cursorAct: number | null = null;

  set(memory: Memory, nActs: number): void {
    this.memory = memory;
    this.nActs = nActs;
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
      const tg = s("g", { class: "fl-mem-total", transform: "translate(0,18)" });
      const line = s("path", { class: "total" }), text = s("text", { x: 2, y: 10, "font-weight": "600" });
      tg.append(text, line);
      this.total = { g: tg, line, text, live: new Float64Array(0) };
      this.svg.append(tg, ...[...this.blocks.values()].map((b) => b.g), this.cursor);
      this.box.append(this.svg);
      this.blockSig = sig;
    }
    if (acts !== this.acts || step !== this.step) this.drawTicks(acts, step);
    this.acts = acts; this.step = step;
    const seen = new Set<string>();
    this.total!.live = liveOverActs(memory.lifetimes, acts);
    attr(this.total!.line, "d", totalPath(this.total!.live, step));
    let y = 18 + TOTAL_ROWS * ROW + 4;
    const sizes = new Map(blocks.map((b) => [b.id, b.size || Math.max(1, ...(byBlock.get(b.id) ?? []).map((l) => l.offset + l.size))]));
    const peaks = new Map(blocks.map((b) => [b.id, Math.max(0, ...liveOverActs(byBlock.get(b.id) ?? [], acts))]));
    const key = (b: MemBlock): number => (this.sortBy === "size" ? sizes.get(b.id)! : this.sortBy === "peak" ? peaks.get(b.id)! : 0);
    const sorted = this.sortBy === "id" ? blocks : blocks.slice().sort((p, q) => key(q) - key(p));
    for (const b of sorted) {
      const blk = this.blocks.get(b.id)!;
      const ls = (byBlock.get(b.id) ?? []).slice().sort((p, q) => p.offset - q.offset || p.first_act - q.first_act);
      blk.size = sizes.get(b.id)!;
      attr(blk.g, "transform", `translate(0,${y})`);
      blk.y = y;
      attr(blk.occ, "d", occupancyPath(ls, acts, step, blk.size));
      attr(blk.bars, "transform", `translate(${LABEL_W},0) scale(${step},1)`);
      const limit = this.expanded.has(b.id) ? MAX_ROWS : FOLD_ROWS;
      const shown = ls.slice(0, limit).map((l, row) => this.bar(l, row, seen));
      order(blk.labels, shown.map((r) => r.label));
      order(blk.bars, shown.map((r) => r.bar));
      let rows = 2 + shown.length;
      if (ls.length > limit || (limit > FOLD_ROWS && ls.length > FOLD_ROWS)) {
        if (!blk.more) {
          const more = s("text", { x: 10, class: "fl-mem-more fl-link" });
          more.addEventListener("click", () => this.toggleBlock(b.id));
          blk.more = more;
        }
        attr(blk.more, "y", 2 * ROW + shown.length * ROW + 10);
        blk.more.textContent = ls.length > limit
          ? `… and ${ls.length - limit} more registers${limit < MAX_ROWS ? " (click to show)" : ""}`
          : "show fewer registers";
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
    if (this.cursorAct !== null) this.totalText(this.cursorAct);
  }

  /** Show all of block `id`'s registers (up to MAX_ROWS), or fold it back to FOLD_ROWS. */
  private toggleBlock(id: string): void {
    if (!this.expanded.delete(id)) this.expanded.add(id);
    const a = this.cursorAct;
    this.set(this.memory, this.nActs);
    if (a !== null) this.at(a);
  }

  private totalText(a: number): void {
    const live = this.total!.live;
    let peak = 0;
    for (let i = 1; i < live.length; i++) if (live[i] > live[peak]) peak = i;
    const text = `total live: ${bytes(live[a] ?? 0)} at act ${a}, peak ${bytes(live[peak] ?? 0)} at act ${peak}`;
    if (this.total!.text.textContent !== text) this.total!.text.textContent = text;
  }

  /** Move the cursor to act `a` and mark the registers live there. */
  at(a: number): void {
    if (!this.cursor) return;
    this.cursorAct = a;
    this.totalText(a);
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
    this.total = null;
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
      const label = s("text", { x: 10, y: y + 10 }, name(l));
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
  const blobs = l.lbns?.length ? `${l.lbns.join(", ")} (${l.regst})` : l.regst;
  return `${blobs} in ${l.block} at offset ${l.offset}, ${bytes(l.size)}, acts ${l.first_act}–${l.last_act}`;
}

/** A row's name: its register's first blob (`fc1/out`, `+2` for two more), cut at the front to fit the label column
 * (an lbn's end names the op and output); the register id where the record has no lbns. */
export function name(l: Lifetime): string {
  if (!l.lbns?.length) return `${l.regst} @${l.offset}`;
  const more = l.lbns.length > 1 ? ` +${l.lbns.length - 1}` : "";
  const room = LABEL_CHARS - more.length;
  const first = l.lbns[0].length > room ? `…${l.lbns[0].slice(l.lbns[0].length - room + 1)}` : l.lbns[0];
  return first + more;
}

/** Live bytes at each act of `ls`, summed (a lifetime is live from its first act to its last, both included). */
function liveOverActs(ls: Lifetime[], acts: number): Float64Array {
  const live = new Float64Array(acts);
  for (const l of ls) for (let a = Math.max(0, l.first_act); a <= Math.min(acts - 1, l.last_act); a++) live[a] += l.size;
  return live;
}

/** The total row's line: live bytes per act, the peak at the row's top, as a step line through the acts' middles. */
function totalPath(live: Float64Array, step: number): string {
  const peak = Math.max(1, ...live), top = ROW + 2, h0 = (TOTAL_ROWS - 1) * ROW - 2;
  const parts: string[] = [];
  for (let a = 0; a < live.length; a++) {
    const y = (top + h0 - (live[a] / peak) * h0).toFixed(2);
    parts.push(`${a ? "L" : "M"}${(LABEL_W + a * step).toFixed(2)},${y}H${(LABEL_W + (a + 1) * step).toFixed(2)}`);
  }
  return parts.join("");
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
