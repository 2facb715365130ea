// The payload contract (payload.md): parsing that never throws, and messages that say where.
// Version 1 is the payload as flowlab builds it; version 2 is how a notebook stores it (flowlab/viz/payload_pack.py):
// the head (kind, title, summary) as is and the rest as `body`, base64 of gzipped JSON. Decoded (readPayload), a
// version-2 payload is a version-1 payload with every node, edge and detail row.
// A live widget's comm carries version 2 with a binary body instead (encoding "gzip", the body an ipywidgets buffer
// that arrives as a DataView): the gzip bytes without base64's third more.
import { type OverlayData, parseOverlay } from "./overlay.js";
import type { ProvenanceData } from "./provenance.js";
import { parseSchedule, type ScheduleData } from "./schedview.js";
import { parseStuck, type StuckData } from "./stuck.js";

export const PAYLOAD_VERSION = 2;
export const PACKED_ENCODING = "gzip+base64";
export const BINARY_ENCODING = "gzip";
export const MIME_TYPES = {
  jobset: "application/vnd.flowlab.jobset+json",
  plan: "application/vnd.flowlab.plan+json",
  run: "application/vnd.flowlab.run+json",
  compare: "application/vnd.flowlab.compare+json",
} as const;

export type NodeKind = "op" | "task" | "regst" | "memblock" | "interface";
export type EdgeKind = "data" | "ctrl" | "shared_mem";

export interface GNode {
  id: string; label: string; kind: NodeKind; parent: string | null;
  type?: string; lane?: string; classes?: string[]; detail?: string;
  device?: string; sbp?: string;  // a multi-device Plan's task: its device and SBP signature
  note?: string;  // a boxing task: what it converts, for whom
}
export interface GGroup {
  id: string; label: string; parent: string | null; kind: string; collapsed: boolean;
  job_kind?: string;  // h/nbpy's payloads name the job kind (user, push, pull, model_io, main) of job groups
}
export interface GEdge { id: string; source: string; target: string; kind: EdgeKind; label?: string }
export interface DetailSection { title: string; rows: [string, string][] }
export interface Detail { title: string; sections: DetailSection[] }
export interface Graph {
  nodes: GNode[]; groups: GGroup[]; edges: GEdge[]; lanes: string[]; details: Record<string, Detail>;
}
export interface BlobStats {
  shape?: number[]; dtype?: string; min?: number | null; max?: number | null; mean?: number | null;
  nan?: number; inf?: number;
}
export interface Act {
  index: number; node: string | null; actor: string; job: string; reads: string[]; writes: string[];
  blobs: Record<string, BlobStats>;
  tier?: string;  // which kernel ran the act: "reference" or "numba" (flowlab/kernels/tiered.py); none without a kernel
}
export interface MemBlock { id: string; size: number; mem_case: string }
export interface Lifetime {
  regst: string; block: string; offset: number; size: number; first_act: number; last_act: number;
  lbns?: string[];  // the blobs the register holds (the memory view names rows by them); absent in older payloads
}
export interface Memory { blocks: MemBlock[]; lifetimes: Lifetime[] }

interface Base { flowlab_payload: number; title: string; graph: Graph; overlay?: OverlayData }
export interface JobsetPayload extends Base { kind: "jobset"; shared_interfaces: Record<string, string[]> }
export interface PlanPayload extends Base {
  kind: "plan"; summary: Record<string, number>;
  stuck?: StuckData;  // a hang drawn on the Plan (stuck.ts)
  provenance?: ProvenanceData;  // the rewrite that made each task, and the stepper to open there (provenance.ts)
  schedule?: ScheduleData;  // a job function's captured Schedules and the execution policy (schedview.ts)
}
export interface RunPayload extends Base { kind: "run"; acts: Act[]; memory: Memory }
/** One thing the compare view lists: its status and its box on each side (null where it has none). */
export interface CompareItem { what: string; status: "added" | "removed" | "changed"; label: string; a: string | null; b: string | null; summary: string }
/** Two views side by side (flowlab/notebook/compare.py); `graph` is the right side's, for code that wants one. */
export interface ComparePayload extends Base {
  kind: "compare"; a: JobsetPayload | PlanPayload; b: JobsetPayload | PlanPayload; labels: [string, string];
  pairs: [string, string][]; items: CompareItem[];
}
/** One rewrite of a compile (flowlab/notebook/rewrites_view.py): its compare payload and the function that made it. */
export interface RewriteStep {
  index: number; name: string; job: string; kind: string; source: string; source_line: string;
  counts: Record<string, number>; compare: ComparePayload; made_by: Record<string, number>;
}
/** Every rewrite of a compile, stepped through (rewrites.ts); `graph` is the first step's right side. */
export interface RewritesPayload extends Base { kind: "rewrites"; index: number; steps: RewriteStep[]; made: Record<string, number> }
export type Payload = JobsetPayload | PlanPayload | RunPayload | ComparePayload | RewritesPayload;

export type Parsed = { ok: true; payload: Payload } | { ok: false; message: string; newer?: boolean };

class Bad extends Error {}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const what = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "string" ? `the string ${JSON.stringify(v).slice(0, 40)}` : typeof v;

function str(o: Record<string, unknown>, k: string, at: string, optional = false): string | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (typeof v !== "string") throw new Bad(`${at}.${k}: expected a string, got ${what(v)}`);
  return v;
}
function strOrNull(o: Record<string, unknown>, k: string, at: string): string | null {
  const v = o[k];
  if (v === null || v === undefined) return null;
  if (typeof v !== "string") throw new Bad(`${at}.${k}: expected a string or null, got ${what(v)}`);
  return v;
}
function arr(o: Record<string, unknown>, k: string, at: string, optional = false): unknown[] {
  const v = o[k];
  if (v === undefined && optional) return [];
  if (!Array.isArray(v)) throw new Bad(`${at}.${k}: expected a list, got ${what(v)}`);
  return v;
}
function obj(v: unknown, at: string): Record<string, unknown> {
  if (!isObj(v)) throw new Bad(`${at}: expected an object, got ${what(v)}`);
  return v;
}
function strList(v: unknown[], at: string): string[] {
  return v.map((s, i) => {
    if (typeof s !== "string") throw new Bad(`${at}[${i}]: expected a string, got ${what(s)}`);
    return s;
  });
}
function oneOf<T extends string>(v: string, allowed: readonly T[], at: string): T {
  if (!(allowed as readonly string[]).includes(v)) throw new Bad(`${at}: expected one of ${allowed.join(", ")}, got ${JSON.stringify(v)}`);
  return v as T;
}

const NODE_KINDS = ["op", "task", "regst", "memblock", "interface"] as const;
const EDGE_KINDS = ["data", "ctrl", "shared_mem"] as const;

export function parseGraph(raw: unknown, at = "graph"): Graph {
  const g = obj(raw, at);
  const groups: GGroup[] = arr(g, "groups", at, true).map((r, i) => {
    const o = obj(r, `${at}.groups[${i}]`), p = `${at}.groups[${i}]`;
    return { id: str(o, "id", p)!, label: str(o, "label", p)!, parent: strOrNull(o, "parent", p),
      kind: str(o, "kind", p, true) ?? "scope", collapsed: o.collapsed === true, job_kind: str(o, "job_kind", p, true) };
  });
  const nodes: GNode[] = arr(g, "nodes", at).map((r, i) => {
    const o = obj(r, `${at}.nodes[${i}]`), p = `${at}.nodes[${i}]`;
    return { id: str(o, "id", p)!, label: str(o, "label", p)!, kind: oneOf(str(o, "kind", p)!, NODE_KINDS, `${p}.kind`),
      parent: strOrNull(o, "parent", p), type: str(o, "type", p, true), lane: str(o, "lane", p, true),
      device: str(o, "device", p, true), sbp: str(o, "sbp", p, true), note: str(o, "note", p, true),
      classes: strList(arr(o, "classes", p, true), `${p}.classes`), detail: str(o, "detail", p, true) };
  });
  const edges: GEdge[] = arr(g, "edges", at, true).map((r, i) => {
    const o = obj(r, `${at}.edges[${i}]`), p = `${at}.edges[${i}]`;
    return { id: str(o, "id", p)!, source: str(o, "source", p)!, target: str(o, "target", p)!,
      kind: oneOf(str(o, "kind", p, true) ?? "data", EDGE_KINDS, `${p}.kind`), label: str(o, "label", p, true) };
  });
  const lanes = strList(arr(g, "lanes", at, true), `${at}.lanes`);
  const details: Record<string, Detail> = {};
  const rawDetails = g.details === undefined ? {} : obj(g.details, `${at}.details`);
  for (const [k, v] of Object.entries(rawDetails)) {
    const p = `${at}.details[${JSON.stringify(k)}]`, d = obj(v, p);
    details[k] = { title: str(d, "title", p)!, sections: arr(d, "sections", p, true).map((s, i) => {
      const so = obj(s, `${p}.sections[${i}]`), sp = `${p}.sections[${i}]`;
      return { title: str(so, "title", sp)!, rows: arr(so, "rows", sp, true).map((row, j) => {
        if (!Array.isArray(row) || row.length !== 2) throw new Bad(`${sp}.rows[${j}]: expected a [key, value] pair, got ${what(row)}`);
        return [String(row[0]), String(row[1])] as [string, string];
      }) };
    }) };
  }
  // Ids must be unique and every reference must resolve, or the views would silently drop parts of the graph.
  const groupIds = new Set<string>(), nodeIds = new Set<string>();
  for (const gr of groups) {
    if (groupIds.has(gr.id)) throw new Bad(`${at}.groups: the id ${JSON.stringify(gr.id)} appears twice`);
    groupIds.add(gr.id);
  }
  for (const n of nodes) {
    if (nodeIds.has(n.id) || groupIds.has(n.id)) throw new Bad(`${at}.nodes: the id ${JSON.stringify(n.id)} appears twice`);
    nodeIds.add(n.id);
  }
  groups.forEach((gr, i) => {
    if (gr.parent !== null && !groupIds.has(gr.parent)) throw new Bad(`${at}.groups[${i}].parent: no group has the id ${JSON.stringify(gr.parent)}`);
  });
  nodes.forEach((n, i) => {
    if (n.parent !== null && !groupIds.has(n.parent)) throw new Bad(`${at}.nodes[${i}].parent: no group has the id ${JSON.stringify(n.parent)}`);
  });
  edges.forEach((e, i) => {
    for (const end of ["source", "target"] as const) {
      if (!nodeIds.has(e[end])) throw new Bad(`${at}.edges[${i}].${end}: no node has the id ${JSON.stringify(e[end])}`);
    }
  });
  // A parent cycle would make the group tree infinite.
  const parentOf = new Map(groups.map((gr) => [gr.id, gr.parent]));
  for (const gr of groups) {
    const seen = new Set<string>();
    for (let p: string | null | undefined = gr.id; p; p = parentOf.get(p)) {
      if (seen.has(p)) throw new Bad(`${at}.groups: the group ${JSON.stringify(gr.id)} is its own ancestor`);
      seen.add(p);
    }
  }
  return { nodes, groups, edges, lanes, details };
}

function parseMemory(raw: unknown, at: string): Memory {
  if (raw === undefined || raw === null) return { blocks: [], lifetimes: [] };
  const m = obj(raw, at);
  const num = (o: Record<string, unknown>, k: string, p: string): number => {
    if (typeof o[k] !== "number") throw new Bad(`${p}.${k}: expected a number, got ${what(o[k])}`);
    return o[k] as number;
  };
  return {
    blocks: arr(m, "blocks", at, true).map((b, i) => {
      const o = obj(b, `${at}.blocks[${i}]`), p = `${at}.blocks[${i}]`;
      return { id: str(o, "id", p)!, size: num(o, "size", p), mem_case: str(o, "mem_case", p, true) ?? "" };
    }),
    lifetimes: arr(m, "lifetimes", at, true).map((l, i) => {
      const o = obj(l, `${at}.lifetimes[${i}]`), p = `${at}.lifetimes[${i}]`;
      return { regst: str(o, "regst", p)!, block: str(o, "block", p)!, offset: num(o, "offset", p), size: num(o, "size", p),
        first_act: num(o, "first_act", p), last_act: num(o, "last_act", p), ...lbnsOf(o, p) };
    }),
  };
}

function lbnsOf(o: Record<string, unknown>, p: string): { lbns?: string[] } {
  if (o.lbns === undefined || o.lbns === null) return {};
  if (!Array.isArray(o.lbns) || !o.lbns.every((x) => typeof x === "string")) throw new Bad(`${p}.lbns: expected a list of strings, got ${what(o.lbns)}`);
  return { lbns: o.lbns as string[] };
}

export function parseActs(raw: unknown[], at: string): Act[] {
  return raw.map((a, i) => {
    const o = obj(a, `${at}[${i}]`), p = `${at}[${i}]`;
    const blobs: Record<string, BlobStats> = {};
    for (const [k, v] of Object.entries(o.blobs === undefined ? {} : obj(o.blobs, `${p}.blobs`))) blobs[k] = obj(v, `${p}.blobs.${k}`) as BlobStats;
    return { index: typeof o.index === "number" ? o.index : i, node: strOrNull(o, "node", p), actor: str(o, "actor", p)!,
      job: str(o, "job", p, true) ?? "", reads: strList(arr(o, "reads", p, true), `${p}.reads`),
      writes: strList(arr(o, "writes", p, true), `${p}.writes`), blobs, tier: str(o, "tier", p, true) };
  });
}

export { parseMemory };

function parseSide(raw: unknown, at: string): JobsetPayload | PlanPayload {
  const side = parsePayload(obj(raw, at));
  if (!side.ok) throw new Bad(`${at}: ${side.message.replace(/^this flowlab output cannot be shown: /, "")}`);
  if (side.payload.kind !== "jobset" && side.payload.kind !== "plan") throw new Bad(`${at}.kind: expected jobset or plan, got ${side.payload.kind}`);
  return side.payload;
}

function parseCompare(o: Record<string, unknown>, v: number, title: string): ComparePayload {
  const a = parseSide(o.a, "payload.a"), b = parseSide(o.b, "payload.b");
  const labels = strList(arr(o, "labels", "payload", true), "payload.labels");
  const pairs = arr(o, "pairs", "payload", true).map((p, i) => {
    const pair = strList(Array.isArray(p) ? p : [], `payload.pairs[${i}]`);
    if (pair.length !== 2) throw new Bad(`payload.pairs[${i}]: expected [id on the left, id on the right], got ${what(p)}`);
    return pair as [string, string];
  });
  const items = arr(o, "items", "payload", true).map((r, i) => {
    const it = obj(r, `payload.items[${i}]`), p = `payload.items[${i}]`;
    return { what: str(it, "what", p, true) ?? "", status: oneOf(str(it, "status", p)!, ["added", "removed", "changed"] as const, `${p}.status`),
      label: str(it, "label", p)!, a: strOrNull(it, "a", p), b: strOrNull(it, "b", p), summary: str(it, "summary", p, true) ?? "" };
  });
  return { flowlab_payload: v, kind: "compare", title, graph: b.graph, a, b, pairs, items,
    labels: [labels[0] ?? "before", labels[1] ?? "after"] };
}

function parseRewrites(o: Record<string, unknown>, v: number, title: string): RewritesPayload {
  const steps = arr(o, "steps", "payload").map((raw, i): RewriteStep => {
    const s = obj(raw, `payload.steps[${i}]`), p = `payload.steps[${i}]`;
    return { index: typeof s.index === "number" ? s.index : i, name: str(s, "name", p)!, job: str(s, "job", p, true) ?? "",
      kind: str(s, "kind", p, true) ?? "job", source: str(s, "source", p, true) ?? "", source_line: str(s, "source_line", p, true) ?? "",
      counts: (s.counts === undefined ? {} : obj(s.counts, `${p}.counts`)) as Record<string, number>,
      compare: parseCompare(obj(s.compare, `${p}.compare`), v, str(obj(s.compare, `${p}.compare`), "title", p, true) ?? ""),
      made_by: (s.made_by === undefined ? {} : obj(s.made_by, `${p}.made_by`)) as Record<string, number> };
  });
  if (!steps.length) throw new Bad("payload.steps: expected at least one rewrite");
  const index = typeof o.index === "number" && o.index >= 0 && o.index < steps.length ? o.index : 0;
  return { flowlab_payload: v, kind: "rewrites", title, graph: steps[index].compare.graph, index, steps,
    made: (o.made === undefined ? {} : obj(o.made, "payload.made")) as Record<string, number> };
}

function parseProvenance(raw: unknown, v: number): ProvenanceData {
  const o = obj(raw, "payload.provenance");
  const rw = obj(o.rewrites, "payload.provenance.rewrites");
  const steps = arr(o, "steps", "payload.provenance").map((s, i) => {
    const so = obj(s, `payload.provenance.steps[${i}]`);
    return { index: typeof so.index === "number" ? so.index : i, name: String(so.name ?? ""), job: String(so.job ?? "") };
  });
  const madeBy = obj(o.made_by, "payload.provenance.made_by") as Record<string, number>;
  for (const [k, at] of Object.entries(madeBy)) {
    if (typeof at !== "number" || !steps[at]) throw new Bad(`payload.provenance.made_by.${k}: expected a rewrite's position, got ${what(at)}`);
  }
  const opMade = (o.op_made === undefined ? {} : obj(o.op_made, "payload.provenance.op_made")) as Record<string, [number, string]>;
  return { made_by: madeBy, op_made: opMade, steps, rewrites: parseRewrites(rw, v, typeof rw.title === "string" ? rw.title : "rewrites") };
}

/** Parse a payload; never throws. A newer version or a malformed payload comes back as a message for people. */
export function parsePayload(data: unknown): Parsed {
  try {
    if (typeof data === "string") {
      try { data = JSON.parse(data); } catch { throw new Bad("the payload is not valid JSON"); }
    }
    const o = obj(data, "payload");
    const v = o.flowlab_payload;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1) {
      throw new Bad(`payload.flowlab_payload: expected the payload version (an integer >= 1), got ${what(v)}`);
    }
    if (v > PAYLOAD_VERSION) {
      return { ok: false, newer: true, message: `this output was written by a newer flowlab (payload version ${v}); this viewer reads versions 1 to ${PAYLOAD_VERSION}` };
    }
    if (o.body !== undefined && o.graph === undefined) {
      throw new Bad(`payload.body: a stored (version ${v}) payload must be decoded first (readPayload), as the views do`);
    }
    const kind = oneOf(str(o, "kind", "payload")!, ["jobset", "plan", "run", "compare", "rewrites"] as const, "payload.kind");
    const title = typeof o.title === "string" ? o.title : kind;
    if (kind === "compare") return { ok: true, payload: parseCompare(o, v, title) };
    if (kind === "rewrites") return { ok: true, payload: parseRewrites(o, v, title) };
    const graph = parseGraph(o.graph);
    const overlay = o.overlay === undefined ? {} : { overlay: parseOverlay(o.overlay) };  // numbers on the graph
    if (kind === "jobset") {
      const si = o.shared_interfaces === undefined ? {} : obj(o.shared_interfaces, "payload.shared_interfaces");
      const shared: Record<string, string[]> = {};
      for (const [k, jobs] of Object.entries(si)) shared[k] = strList(Array.isArray(jobs) ? jobs : [], `payload.shared_interfaces.${k}`);
      return { ok: true, payload: { flowlab_payload: v, kind, title, graph, shared_interfaces: shared, ...overlay } };
    }
    if (kind === "plan") {
      const summary = (o.summary === undefined ? {} : obj(o.summary, "payload.summary")) as Record<string, number>;
      const stuck = o.stuck === undefined ? {} : { stuck: parseStuck(o.stuck) };
      const provenance = o.provenance === undefined ? {} : { provenance: parseProvenance(o.provenance, v) };
      const schedule = o.schedule === undefined ? {} : { schedule: parseSchedule(o.schedule) };
      return { ok: true, payload: { flowlab_payload: v, kind, title, graph, summary, ...overlay, ...stuck, ...provenance, ...schedule } };
    }
    const acts = parseActs(arr(o, "acts", "payload"), "payload.acts");
    return { ok: true, payload: { flowlab_payload: v, kind, title, graph, acts, memory: parseMemory(o.memory, "payload.memory"), ...overlay } };
  } catch (e) {
    if (e instanceof Bad) return { ok: false, message: `this flowlab output cannot be shown: ${e.message}` };
    return { ok: false, message: `this flowlab output cannot be shown: ${String(e)}` };
  }
}

const base64Bytes = (text: string): Uint8Array<ArrayBuffer> => {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
};

/** The bytes of a binary body (an ipywidgets buffer: DataView; or an ArrayBuffer or typed array), else null. */
function binaryBytes(v: unknown): Uint8Array<ArrayBuffer> | null {
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v) && v.buffer instanceof ArrayBuffer) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return null;
}

/** A stored payload (version 2: head + gzipped `body`, base64 text in a notebook, binary over a widget's comm) as the
 * full object; anything else comes back as it is. Throws Bad with a message for people where the body cannot be read. */
async function unpackStored(data: unknown): Promise<unknown> {
  if (typeof data === "string") {
    try { data = JSON.parse(data); } catch { return data; }  // parsePayload says it is not JSON
  }
  if (!isObj(data) || data.body === undefined || data.graph !== undefined) return data;
  // a newer flowlab may store its payloads another way: parsePayload says "newer", not "cannot decode"
  if (typeof data.flowlab_payload === "number" && data.flowlab_payload > PAYLOAD_VERSION) return data;
  const at = "payload";
  const binary = binaryBytes(data.body);
  if (data.encoding === BINARY_ENCODING) {
    if (!binary) throw new Bad(`${at}.body: encoding ${JSON.stringify(BINARY_ENCODING)} has a binary body (a widget buffer), got ${what(data.body)}`);
  } else if (data.encoding === PACKED_ENCODING) {
    str(data, "body", at);
  } else {
    throw new Bad(`${at}.encoding: expected ${JSON.stringify(PACKED_ENCODING)}, got ${what(data.encoding)} (${JSON.stringify(BINARY_ENCODING)} is for a binary body, as a live widget sends it)`);
  }
  if (typeof DecompressionStream === "undefined") {
    throw new Bad("this browser cannot decompress a stored flowlab output (it has no DecompressionStream); a newer browser draws it");
  }
  let text: string;
  try {
    const bytes = binary ?? base64Bytes(data.body as string);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    text = await new Response(stream).text();
  } catch (e) {
    const form = data.encoding === BINARY_ENCODING ? "gzipped JSON" : "base64 of gzipped JSON";
    throw new Bad(`${at}.body: expected ${form}, and it does not decode (${String(e)})`);
  }
  let rest: unknown;
  try { rest = JSON.parse(text); } catch { throw new Bad(`${at}.body: the decompressed body is not valid JSON`); }
  const head: Record<string, unknown> = { ...data };
  delete head.body;
  delete head.encoding;
  return { ...obj(rest, `${at}.body`), ...head };
}

/** Decode (a stored version-2 payload) and parse; never throws, as parsePayload. */
export async function readPayload(data: unknown): Promise<Parsed> {
  try {
    return parsePayload(await unpackStored(data));
  } catch (e) {
    return { ok: false, message: `this flowlab output cannot be shown: ${e instanceof Bad ? e.message : String(e)}` };
  }
}
