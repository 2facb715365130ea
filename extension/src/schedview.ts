// The Schedule view (issue 26: "the Schedule of a call (its fused segments and lanes) as a view beside the Plan"): a
// Plan payload's optional `schedule` section (flowlab/viz/payload_sections.py, from session.schedule_payload) drawn
// above the Plan: the execution policy's choice (print(session.execution)), then a captured call's steps in order,
// one row per lane (one row where the call has no lanes), the runs of steps in one fused segment boxed together (a
// segment whose steps are split by steps outside it, the section notifies, continues in a box of its own). A
// step is linked to its Plan task: a click selects and shows the task in the Plan view; selecting a task in the Plan
// marks its steps.
import { h } from "./dom.js";
import type { GraphView, GraphViewOptions } from "./graphview.js";

export interface SchedStep {
  node: string; task_id: number; name: string; op_type: string; task_type: string; thread: [number, number];
  reads: [number, number][]; writes: [number, number][]; section: number | null;
}
export interface SchedLane { thread: [number, number]; label: string; steps: number[] }
export interface Schedule {
  key: string[]; acts: number; replays: number; runs_on: string; text: string;
  steps: SchedStep[]; segments: number[][]; lanes: SchedLane[];
}
export interface ScheduleData { execution: string; schedules: Schedule[] }

/** The section as the payload has it; throws an Error naming what is wrong (parsePayload turns it into a message). */
export function parseSchedule(raw: unknown, at = "payload.schedule"): ScheduleData {
  const o = raw as Record<string, unknown>;
  if (typeof o !== "object" || o === null || Array.isArray(o)) throw new Error(`${at}: expected an object`);
  if (!Array.isArray(o.schedules)) throw new Error(`${at}.schedules: expected a list`);
  const schedules = o.schedules.map((s, i) => {
    const so = s as Schedule;
    if (!Array.isArray(so.steps) || so.steps.some((st) => typeof st?.node !== "string")) {
      throw new Error(`${at}.schedules[${i}].steps: expected steps with their Plan node ids`);
    }
    return { ...so, key: so.key ?? [], segments: Array.isArray(so.segments) ? so.segments : [],
      lanes: Array.isArray(so.lanes) ? so.lanes : [] };
  });
  return { execution: String(o.execution ?? ""), schedules };
}

const regs = (rs: [number, number][]): string => rs.map(([r, i]) => `r${r}#${i}`).join(" ");

/** One schedule: a header, then a row per lane of step chips, consecutive steps of one segment boxed together. */
function scheduleRows(sc: Schedule, go: (node: string, chip: HTMLElement) => void): HTMLElement {
  const box = h("div", "fl-sched-one");
  const kernels = sc.steps.filter((s) => s.section === null).length;
  box.append(h("div", "fl-sched-head", `${sc.key.join(" + ")}: ${sc.acts} acts, ${kernels} kernel steps, `
    + `${sc.steps.length - kernels} notifies · runs on ${sc.runs_on} · ${sc.replays} replays · `
    + `${sc.segments.length} fused segment${sc.segments.length === 1 ? "" : "s"} · ${sc.lanes.length || 1} lane${sc.lanes.length > 1 ? "s" : ""}`));
  const segOf = new Map<number, number>();
  sc.segments.forEach((seg, k) => { for (const i of seg) segOf.set(i, k); });
  const lanes = sc.lanes.length ? sc.lanes : [{ thread: [0, 0] as [number, number], label: "every step", steps: sc.steps.map((_, i) => i) }];
  for (const lane of lanes) {
    const row = h("div", "fl-sched-row");
    row.dataset.lane = lane.thread.join(":");
    const label = h("div", "fl-sched-lane", lane.label);
    label.title = `machine ${lane.thread[0]}, Plan thread ${lane.thread[1]}: ${lane.steps.length} steps`;
    const chips = h("div", "fl-sched-chips");
    let group: HTMLElement | null = null, groupSeg: number | undefined;
    const begun = new Set<number>();  // a segment's steps in this row may be split by steps outside it (notifies)
    for (const i of lane.steps) {
      const st = sc.steps[i];
      const seg = segOf.get(i);
      const chip = h("span", `fl-sched-step${st.section !== null ? " notify" : ""}`, `#${i} ${st.name}`);
      chip.dataset.step = String(i);
      chip.dataset.node = st.node;
      chip.title = st.section !== null ? `#${i} ${st.name}: notifies critical section ${st.section}`
        : `#${i} ${st.name} [${st.op_type}] ${st.task_type}\nreads ${regs(st.reads) || "-"}\nwrites ${regs(st.writes) || "-"}`
          + (seg !== undefined ? `\nfused segment ${seg}` : "") + "\nclick: show its task in the Plan";
      chip.addEventListener("click", () => go(st.node, chip));
      if (seg === undefined) {
        group = null;
        chips.append(chip);
        continue;
      }
      if (group === null || groupSeg !== seg) {
        group = h("span", "fl-sched-seg");
        group.dataset.seg = String(seg);
        group.append(h("span", "fl-sched-seg-label", begun.has(seg) ? `seg ${seg} (cont.)` : `seg ${seg}`));
        begun.add(seg);
        groupSeg = seg;
        chips.append(group);
      }
      group.append(chip);
    }
    row.append(label, chips);
    box.append(row);
  }
  return box;
}

/** Wire a Schedule into a Plan view: the panel above the graph, chips linked to the tasks both ways. */
export function attachSchedule(sd: ScheduleData, opts: GraphViewOptions): {
  opts: GraphViewOptions; mount: (view: GraphView, el: HTMLElement) => void;
} {
  const panel = h("div", "fl-panel fl-sched");
  const mark = (node: string | null): void => {
    for (const c of panel.querySelectorAll<HTMLElement>(".fl-sched-step")) c.classList.toggle("on", c.dataset.node === node);
  };
  return {
    opts: { ...opts, onDetail: (pane, id) => { mark(id); opts.onDetail?.(pane, id); } },
    mount: (view, el) => {
      ensureScheduleStyle(el.ownerDocument);
      const policy = h("details", "fl-sched-policy");
      policy.open = true;
      const lines = sd.execution.split("\n");
      policy.append(h("summary", "", lines[0] ?? "execution"), h("pre", "", lines.slice(1).join("\n")));
      const body = h("div", "fl-sched-body");
      const go = (node: string): void => { void view.focus(node).then(() => mark(node)); };
      const show = (i: number): void => body.replaceChildren(scheduleRows(sd.schedules[i], go));
      panel.append(policy);
      if (sd.schedules.length > 1) {
        const pick = h("select", "fl-sched-pick");
        pick.title = "the job function's captured schedules (one per start state), the one replayed last first";
        sd.schedules.forEach((sc, i) => {
          const o = h("option", "", `schedule ${i + 1} of ${sd.schedules.length}: ${sc.replays} replays, runs on ${sc.runs_on}`);
          o.value = String(i);
          pick.append(o);
        });
        pick.addEventListener("change", () => show(Number(pick.value)));
        panel.append(pick);
      }
      panel.append(body);
      show(0);
      el.insertBefore(panel, view.root);  // above the Plan it links to
    },
  };
}

const CSS = `
.fl-sched{margin-bottom:6px}
.fl-sched-policy summary{font-weight:600;cursor:pointer;color:var(--fl-fg)}
.fl-sched-policy pre{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;margin:4px 0;white-space:pre-wrap;color:var(--fl-fg)}
.fl-sched-head{font-size:12px;color:var(--fl-muted);margin:4px 0}
.fl-sched-row{display:flex;gap:8px;align-items:flex-start;border-top:1px solid var(--fl-soft);padding:4px 0}
.fl-sched-lane{flex:0 0 130px;font-size:12px;font-weight:600;color:var(--fl-fg);padding-top:3px}
.fl-sched-chips{display:flex;flex-wrap:wrap;gap:3px;align-items:flex-start;max-height:260px;overflow:auto}
.fl-sched-step{font:11px ui-monospace,SFMono-Regular,Menlo,monospace;padding:1px 5px;border:1px solid var(--fl-line);border-radius:3px;background:var(--fl-btn);color:var(--fl-fg);cursor:pointer;white-space:nowrap}
.fl-sched-step:hover{background:var(--fl-btn-hover)}
.fl-sched-step.notify{border-style:dashed;color:var(--fl-muted)}
.fl-sched-step.on{outline:2px solid var(--fl-link);outline-offset:1px}
.fl-sched-seg{display:inline-flex;flex-wrap:wrap;gap:3px;align-items:center;padding:2px 4px;border:2px solid #2ca02c;border-radius:5px;background:rgba(44,160,44,.08)}
.fl-sched-seg-label{font-size:11px;font-weight:600;color:var(--fl-fg);margin-right:2px}
.fl-sched-pick{margin:4px 0}
`;

function ensureScheduleStyle(doc: Document = document): void {
  if (doc.getElementById("flowlab-sched-style")) return;
  const style = doc.createElement("style");
  style.id = "flowlab-sched-style";
  style.textContent = CSS;
  doc.head.append(style);
}
