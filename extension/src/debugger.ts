// The live step debugger (DebuggerWidget traits, payload.md): the Plan with the next actor highlighted, command
// buttons, the actors table (filter, sort, pages), breakpoints, the blob inspector and the memory view.
import { button, fmt, h, kvTable, s } from "./dom.js";
import { download, graphExportButtons } from "./exports.js";
import { GraphView } from "./graphview.js";
import { MemoryView } from "./memory.js";
import type { Graph, Memory } from "./payload.js";
import { tierText } from "./runview.js";
import { attachStuck, type StuckData } from "./stuck.js";

export interface Actor { id: string; name: string; job: string; state: string; why_blocked?: string | null; acts: number }
export interface Breakpoint { id: string | number; kind: string; target?: string | null; text: string }
export interface Inspected {
  regst?: string; lbn?: string; shape?: number[]; dtype?: string; written: boolean;
  stats?: { min?: number | null; max?: number | null; mean?: number | null; nan?: number; inf?: number } | null;
  histogram?: { edges: number[]; counts: number[] } | null; values?: unknown[];
}
export interface DebugState {
  status?: string; error?: string | null; next_node?: string | null; next_actor?: string | null; acts?: number;
  finished?: boolean; actors?: Actor[]; breakpoints?: Breakpoint[]; inspected?: Inspected | null;
  stop?: { reason?: string; op?: string; regst?: string; lbn?: string; nan?: number; inf?: number; node?: string | null } | null; memory?: Memory | null;
  last_act?: { index: number; actor: string; job: string; reads?: string[]; writes?: string[]; tier?: string | null } | null;
}
export type Send = (msg: { type: "command"; cmd: string; args: Record<string, unknown> }) => void;

export const BREAK_KINDS = ["nan", "inf", "op", "job", "blob", "predicate"] as const;
const PAGE = 50;  // rows per page: a page redraws well inside the 100 ms a step may take

export class DebuggerView {
  readonly root = h("div", "fl-debugger");
  graph: GraphView | null = null;
  private readonly graphBox = h("div");
  private readonly status = h("div", "fl-status-line");
  private readonly error = h("div", "fl-error");
  private readonly stop = h("div", "fl-panel");
  private readonly lastAct = h("div", "fl-panel fl-last-act");
  private readonly actorsBox = h("div", "fl-panel");
  private readonly tableWrap = h("div", "fl-table-wrap");
  private readonly pager = h("div", "fl-row");
  private readonly bpList = h("div");
  private readonly inspector = h("div", "fl-panel");
  readonly memory = new MemoryView();
  private readonly fJob = h("select");
  private readonly fState = h("select");
  private readonly fName = h("input");
  private readonly injName = h("input");
  private readonly injValue = h("input");
  private sortKey: keyof Actor = "acts";
  private sortDir = -1;
  private page = 0;
  private memoryDue: { memory: Memory; acts: number } | null = null;
  state: DebugState = {};

  constructor(private readonly send: Send) {
    const cmd = (c: string, args: Record<string, unknown> = {}) => () => this.send({ type: "command", cmd: c, args });
    const n = h("input", "fl-n");
    n.type = "number"; n.min = "1"; n.value = "10"; n.style.width = "60px";
    const controls = h("div", "fl-row fl-controls");
    controls.append(button("◀ back", "undo the last act (every register and actor as before it)", cmd("back", { n: 1 })),
      button("step", "one act of the next actor", cmd("step")),
      button("step n", "n acts", () => this.send({ type: "command", cmd: "step_n", args: { n: Math.max(1, Number(n.value) || 1) } })), n,
      button("continue", "run until a breakpoint or the end", cmd("continue")),
      button("end of job", "run to the end of the current job", cmd("run_to_end_of_job")),
      button("run to selected", "run until the node selected in the graph acts", () => {
        if (this.graph?.selected) this.send({ type: "command", cmd: "run_to", args: { target: this.graph.selected } });
      }),
      button("restart", "start the call over", cmd("restart")),
      // the kernel answers with a "trace" message (receive): the recorded acts as Chrome/Perfetto trace JSON
      button("trace JSON", "save the acts recorded so far as a Chrome/Perfetto trace (JSON)", cmd("export_trace")));
    this.error.style.display = "none";
    this.stop.style.display = "none";
    // Actors table: filters and paging keep it usable at thousands of actors.
    this.fName.placeholder = "filter by name";
    for (const sel of [this.fJob, this.fState]) sel.addEventListener("change", () => { this.page = 0; this.drawActors(); });
    this.fName.addEventListener("input", () => { this.page = 0; this.drawActors(); });
    const filters = h("div", "fl-row");
    filters.append(h("b", "", "actors"), this.fJob, this.fState, this.fName,
      button("show next", "jump to the page of the next actor", () => this.showNext()));
    this.actorsBox.append(filters, this.tableWrap, this.pager);
    // Breakpoints: every kind of the API.
    const kind = h("select");
    for (const k of BREAK_KINDS) kind.append(new Option(k, k));
    const target = h("input");
    target.placeholder = "op / job / blob name, or a predicate";
    const bp = h("div", "fl-panel");
    const add = h("div", "fl-row");
    add.append(h("b", "", "breakpoints"), kind, target, button("add", "add a breakpoint", () => {
      const needs = !["nan", "inf"].includes(kind.value);
      if (needs && !target.value.trim()) { this.showError(`a ${kind.value} breakpoint needs a target`); return; }
      this.send({ type: "command", cmd: "break", args: { kind: kind.value, target: needs ? target.value.trim() : null } });
    }));
    onEnter(target, () => add.querySelector("button")?.click());
    bp.append(add, this.bpList);
    // Inspector: by name, or by clicking a node in the graph.
    const blob = h("input");
    blob.placeholder = "register id, blob (op/out) or op name";
    const insp = h("div", "fl-row");
    const inspect = (): void => {
      if (blob.value.trim()) this.send({ type: "command", cmd: "inspect", args: { name: blob.value.trim() } });
    };
    onEnter(blob, inspect);  // Enter submits, as the button does
    insp.append(h("b", "", "inspect"), blob, button("inspect", "statistics of a register's current values", inspect),
      button("go to writer", "back to right after the act that last wrote the blob (typed, or the one inspected)", () => {
        const name = blob.value.trim() || this.state.inspected?.lbn || "";
        if (!name) { this.showError("go to writer needs a blob: type its name, or inspect one first"); return; }
        this.send({ type: "command", cmd: "go_to_writer", args: { name } });
      }));
    // Inject: overwrite a live blob as dbg.inject does; the value is a number or an expression of x (its values).
    this.injName.placeholder = "blob (op/out), op name or register id";
    this.injValue.placeholder = "value (0, nan, -1e3) or expression of x: np.where(x == 0, 1, x)";
    this.injValue.style.width = "340px";
    const inj = h("div", "fl-row fl-inject");
    inj.append(h("b", "", "inject"), this.injName, this.injValue, button("inject", "overwrite the blob's live values; the acts after read them", () => {
      const name = this.injName.value.trim() || this.state.inspected?.lbn || "";
      if (!name) { this.showError("inject needs a blob: type its name, or inspect one first"); return; }
      if (!this.injValue.value.trim()) { this.showError(`inject into ${name} needs a value or an expression of x`); return; }
      this.send({ type: "command", cmd: "inject", args: { name, value: this.injValue.value.trim() } });
    }));
    onEnter(this.injValue, () => inj.querySelector("button")?.click());
    const inspectBox = h("div", "fl-panel");
    inspectBox.append(insp, this.inspector, inj);
    // The graph comes right under the command buttons: the status, error, stop and last-act panels, which appear,
    // grow and vanish as the run goes, sit below it, so the first step or stop does not move the graph.
    this.root.append(controls, this.graphBox, this.status, this.error, this.stop, this.lastAct, this.actorsBox, bp, inspectBox, this.memory.root);
    this.lastAct.style.display = "none";  // until the run has made an act
  }

  /** Draw the Plan; with `stuck` (the kernel found the run hung: no actor can act, calls in flight), the hang on it. */
  setGraph(graph: Graph, stuck?: StuckData): void {
    this.graph?.destroy();
    const hang = stuck ? attachStuck(stuck, {}) : null;
    this.graph = new GraphView(graph, {
      ...hang?.opts,
      height: 420,
      tools: graphExportButtons(() => this.graph?.root, "flowlab-debugger-plan"),
      onSelect: (id) => {
        if (!id) return;
        const node = this.graph?.tree.nodes.get(id);
        this.send({ type: "command", cmd: "inspect", args: node?.kind === "regst" ? { regst: id } : { node: id } });
      },
    });
    this.graphBox.replaceChildren(this.graph.root);
    hang?.mount(this.graph, this.graphBox);
    void this.graph.ready.then(() => this.setState(this.state));
  }

  /** A custom message from the kernel: "trace" carries the trace JSON that the "trace JSON" button asked for. */
  receive(msg: { type?: string; name?: string; trace?: unknown } | null): void {
    if (msg?.type !== "trace" || msg.trace === undefined) return;
    download(msg.name || "flowlab-trace.json", new Blob([JSON.stringify(msg.trace)], { type: "application/json" }));
  }

  private showError(text: string | null): void {
    this.error.textContent = text ?? "";
    this.error.style.display = text ? "" : "none";
  }

  setState(st: DebugState): void {
    this.state = st ?? {};
    const st2 = this.state;
    // The status of a stop already ends in "next: <actor>"; say it once.
    const saysNext = !!st2.next_actor && (st2.status ?? "").includes(`next: ${st2.next_actor}`);
    if (st2.status === undefined) {  // the kernel has not published a state yet (a cold kernel takes a moment)
      this.status.textContent = "waiting for the debugger's first state from the kernel…";
      return;
    }
    this.status.textContent = `${st2.status ?? ""}${st2.finished ? " (finished)" : ""}  ·  ${st2.acts ?? 0} acts${st2.next_actor && !st2.finished && !saysNext ? `  ·  next: ${st2.next_actor}` : ""}`;
    if (st2.inspected?.lbn) this.injName.placeholder = `${st2.inspected.lbn} (the inspected blob)`;
    this.showError(st2.error ?? null);
    if (st2.stop) {
      const sp = st2.stop;
      // A run-to or breakpoint on an actor names no blob: show the rows a stop has, not a table of dashes.
      const rows: [string, string][] = [["op", sp.op ?? ""], ["register", sp.regst ?? ""], ["blob", sp.lbn ?? ""]];
      if (sp.nan !== undefined && sp.nan !== null) rows.push(["NaN", fmt(sp.nan)], ["Inf", fmt(sp.inf)]);
      const shown = rows.filter(([, v]) => v !== "");
      this.stop.replaceChildren(h("h4", "", `stopped: ${sp.reason ?? ""}`), ...(shown.length ? [kvTable(shown)] : []));
      if (sp.node) this.stop.append(markKey());
      this.stop.style.display = "";
    } else this.stop.style.display = "none";
    const la = st2.last_act;
    if (la) {
      this.lastAct.replaceChildren(h("h4", "", `last act ${la.index}: ${la.actor}${la.job ? ` (${la.job})` : ""}`),
        kvTable([["kernel tier", tierText(la.tier)], ["read", (la.reads ?? []).join(", ") || "nothing"],
          ["wrote", (la.writes ?? []).join(", ") || "nothing"]]));
      this.lastAct.style.display = "";
    } else this.lastAct.style.display = "none";
    if (this.graph) {
      const next = st2.finished ? [] : st2.next_node ? [st2.next_node] : [];
      // A blob stop (NaN, Inf, predicate) names the act that wrote the blob: that node is the culprit, marked
      // apart from the next actor, and the view goes to it, not to the next actor.
      const culprit = st2.stop?.node ? [st2.stop.node] : [];
      this.graph.mark("next", next.filter((id) => !culprit.includes(id)));
      this.graph.mark("culprit", culprit);
      const goTo = culprit.length ? culprit : next;
      if (goTo.length) {
        const id = goTo[0];
        if (!this.graph.tree.isVisible(id)) void this.graph.focus(id, false);
        else this.graph.scrollIntoView(id);
      }
    }
    this.refillFilters();
    this.drawActors();
    this.drawBreakpoints();
    this.drawInspected();
    if (st2.memory) this.drawMemoryLater(st2.memory, st2.acts ?? 0);
  }

  /** The memory view updates its chart (only the lifetimes that moved, memory.ts) after the frame that shows the step,
   * not before it, and only for the newest of the states that arrive before it runs. */
  private drawMemoryLater(memory: Memory, acts: number): void {
    const scheduled = this.memoryDue !== null;
    this.memoryDue = { memory, acts };
    if (scheduled) return;
    const draw = (): void => {
      const due = this.memoryDue;
      this.memoryDue = null;
      if (!due) return;
      this.memory.set(due.memory, due.acts);
      this.memory.at(Math.max(0, due.acts - 1));
    };
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(() => setTimeout(draw, 0));
    else setTimeout(draw, 0);
  }

  private refillFilters(): void {
    const actors = this.state.actors ?? [];
    const fill = (sel: HTMLSelectElement, all: string, values: string[]): void => {
      const cur = sel.value;
      sel.replaceChildren(new Option(all, ""));
      for (const v of [...new Set(values)].sort()) sel.append(new Option(v, v));
      sel.value = values.includes(cur) ? cur : "";
    };
    fill(this.fJob, "all jobs", actors.map((a) => a.job));
    fill(this.fState, "all states", actors.map((a) => a.state));
  }

  filtered(): Actor[] {
    const name = this.fName.value.trim().toLowerCase();
    const rows = (this.state.actors ?? []).filter((a) => (!this.fJob.value || a.job === this.fJob.value)
      && (!this.fState.value || a.state === this.fState.value) && (!name || a.name.toLowerCase().includes(name)));
    const k = this.sortKey;
    return rows.sort((p, q) => {
      const a = p[k] ?? "", b = q[k] ?? "";
      return (typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b))) * this.sortDir;
    });
  }

  private showNext(): void {
    const rows = this.filtered(), i = rows.findIndex((a) => a.id === this.state.next_node || a.name === this.state.next_actor);
    if (i < 0) return;
    this.page = Math.floor(i / PAGE);
    this.drawActors();
    this.tableWrap.querySelector("tr.next")?.scrollIntoView({ block: "nearest" });
  }

  private drawActors(): void {
    const rows = this.filtered();
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    this.page = Math.min(this.page, pages - 1);
    const t = h("table", "fl-actors");
    const head = h("tr");
    const cols: [keyof Actor, string][] = [["name", "actor"], ["job", "job"], ["state", "state"], ["why_blocked", "why"], ["acts", "acts"]];
    for (const [k, label] of cols) {
      const th = h("th", "", `${label}${this.sortKey === k ? (this.sortDir > 0 ? " ▲" : " ▼") : ""}`);
      th.addEventListener("click", () => {
        this.sortDir = this.sortKey === k ? -this.sortDir : 1;
        this.sortKey = k;
        this.drawActors();
      });
      head.append(th);
    }
    head.append(h("th", "", ""));
    t.append(head);
    for (const a of rows.slice(this.page * PAGE, (this.page + 1) * PAGE)) {
      const tr = h("tr");
      if (!this.state.finished && (a.id === this.state.next_node || a.name === this.state.next_actor)) tr.classList.add("next");
      tr.append(h("td", "", a.name), h("td", "", a.job), h("td", "", a.state), h("td", "", a.why_blocked ?? ""), h("td", "", String(a.acts)));
      const td = h("td");
      td.append(button("run to", `run until ${a.name} acts`, () => this.send({ type: "command", cmd: "run_to", args: { target: a.id } })));
      tr.append(td);
      tr.addEventListener("click", (ev) => { if (!(ev.target as Element).closest("button")) void this.graph?.focus(a.id); });
      t.append(tr);
    }
    this.tableWrap.replaceChildren(t);
    this.pager.replaceChildren(h("span", "fl-muted", `${rows.length} of ${(this.state.actors ?? []).length} actors`));
    if (pages > 1) {
      this.pager.append(button("◀", "previous page", () => { this.page = Math.max(0, this.page - 1); this.drawActors(); }),
        h("span", "", `page ${this.page + 1} of ${pages}`),
        button("▶", "next page", () => { this.page = Math.min(pages - 1, this.page + 1); this.drawActors(); }));
    }
  }

  private drawBreakpoints(): void {
    const bps = this.state.breakpoints ?? [];
    this.bpList.replaceChildren();
    if (!bps.length) this.bpList.append(h("div", "fl-muted", "no breakpoints"));
    for (const b of bps) {
      const row = h("div", "fl-row");
      row.append(h("span", "", `#${b.id} ${b.kind}${b.target ? ` ${b.target}` : ""}: ${b.text}`),
        button("remove", "remove this breakpoint", () => this.send({ type: "command", cmd: "unbreak", args: { id: b.id } })));
      this.bpList.append(row);
    }
  }

  private drawInspected(): void {
    const i = this.state.inspected;
    this.inspector.replaceChildren();
    if (!i) { this.inspector.append(h("div", "fl-muted", "click a node or type a name to inspect a register")); return; }
    this.inspector.append(kvTable([["register", i.regst ?? "—"], ["blob", i.lbn ?? "—"], ["shape", i.shape ? `[${i.shape.join(", ")}]` : "—"], ["dtype", i.dtype ?? "—"]]));
    if (!i.written) { this.inspector.append(h("div", "fl-warn", "not yet written: no act has produced this register in this call")); return; }
    const st = i.stats ?? {};
    this.inspector.append(kvTable([["min", fmt(st.min)], ["max", fmt(st.max)], ["mean", fmt(st.mean)], ["NaN", fmt(st.nan ?? 0)], ["Inf", fmt(st.inf ?? 0)]]));
    if ((st.nan ?? 0) > 0 || (st.inf ?? 0) > 0) this.inspector.append(h("div", "fl-warn", `${st.nan ?? 0} NaN and ${st.inf ?? 0} Inf values; the histogram counts the finite ones`));
    if (i.histogram && i.histogram.counts.length) this.inspector.append(histogram(i.histogram.edges, i.histogram.counts));
    if (i.values?.length) this.inspector.append(h("div", "fl-fallback", `first ${i.values.length} values: ${i.values.map(fmt).join(", ")}`));
  }
}

/** Bars over the bin edges, with the outer edges and the tallest count written on the axes. */
export function histogram(edges: number[], counts: number[]): SVGSVGElement {
  const W = 360, H = 110, L = 40, B = 20, max = Math.max(1, ...counts), bw = (W - L - 8) / counts.length;
  const svg = s("svg", { class: "fl-hist", width: W, height: H });
  counts.forEach((c, k) => {
    const hgt = ((H - B - 8) * c) / max;
    const r = s("rect", { x: L + k * bw, y: H - B - hgt, width: Math.max(1, bw - 1), height: hgt });
    r.append(s("title", {}, `[${fmt(edges[k])}, ${fmt(edges[k + 1])}): ${c}`));
    svg.append(r);
  });
  svg.append(s("text", { x: 2, y: 12 }, String(max)), s("text", { x: 2, y: H - B }, "0"),
    s("line", { x1: L, y1: H - B, x2: W - 8, y2: H - B, stroke: "#555" }));
  const ticks = Math.min(4, counts.length);
  for (let t = 0; t <= ticks; t++) {
    const k = Math.round((t * counts.length) / ticks);
    svg.append(s("text", { x: L + k * bw, y: H - 6, "text-anchor": t === 0 ? "start" : t === ticks ? "end" : "middle" }, fmt(edges[k])));
  }
  return svg;
}

/** Run `action` when Enter is pressed in a text box (a box with a button beside it submits like a form). */
function onEnter(input: HTMLInputElement, action: () => void): void {
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.isComposing) { ev.preventDefault(); action(); }
  });
}

/** The stop panel's key to the graph's two marks: the culprit (the act that wrote the blob) and the next actor. */
function markKey(): HTMLElement {
  const key = h("div", "fl-muted fl-mark-key");
  for (const [cls, text] of [["culprit", "wrote it (the culprit)"], ["next", "the next actor"]]) {
    const sw = h("span", `fl-mark-swatch ${cls}`);
    key.append(sw, h("span", "", text));
  }
  return key;
}
