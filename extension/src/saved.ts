// What a saved flowlab output keeps (docs/notebook-outputs.md): one payload per kind (jobset, plan, run) under its own
// mime type, and in the output's metadata `flowlab.view`, the view the user last looked at ("plan", "jobs", a job
// kind such as "user"). These helpers choose what to draw from a bundle and write the live view back into it.
import { BINARY_ENCODING, MIME_TYPES, PACKED_ENCODING } from "./payload.js";

export const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
/** The DOM event a live plan browser dispatches (bubbling) when it draws a view: detail is a ViewChange. */
export const VIEW_EVENT = "flowlab-view";
export interface ViewChange { view: string; packed: unknown }

type Bundle = Readonly<Record<string, unknown>>;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The mime type that holds a view's payload: the Plan, a recorded run, or else jobs (all of them or one kind). */
export function mimeOfView(view: string): string {
  return view === "plan" ? MIME_TYPES.plan : view === "run" ? MIME_TYPES.run : MIME_TYPES.jobset;
}

/** The view the output's metadata names, if any. */
export function savedViewName(metadata: Bundle | undefined): string | null {
  const fl = metadata?.flowlab;
  return isObj(fl) && typeof fl.view === "string" && fl.view ? fl.view : null;
}

/** The flowlab views a bundle holds, in the order a switch lists them: [view name, mime type]. The jobset payload is
 * named by the metadata's view when that is a job view ("user"), else "jobs". */
export function savedViews(data: Bundle, metadata?: Bundle): [string, string][] {
  const named = savedViewName(metadata);
  const jobsName = named !== null && mimeOfView(named) === MIME_TYPES.jobset ? named : "jobs";
  const out: [string, string][] = [];
  if (data[MIME_TYPES.jobset] !== undefined) out.push([jobsName, MIME_TYPES.jobset]);
  if (data[MIME_TYPES.plan] !== undefined) out.push(["plan", MIME_TYPES.plan]);
  if (data[MIME_TYPES.run] !== undefined) out.push(["run", MIME_TYPES.run]);
  return out;
}

/** The mime type to draw first: the view the metadata names when the bundle holds it; else the Plan (what a live
 * %%flowjob output opens on), the jobs, a run; null where the bundle holds no flowlab payload. */
export function chosenMime(data: Bundle, metadata?: Bundle): string | null {
  const named = savedViewName(metadata);
  if (named !== null && data[mimeOfView(named)] !== undefined) return mimeOfView(named);
  for (const m of [MIME_TYPES.plan, MIME_TYPES.jobset, MIME_TYPES.run, MIME_TYPES.compare]) if (data[m] !== undefined) return m;
  return null;
}

function base64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** A payload as the live widget's comm carries it (version 2, encoding "gzip", the body bytes) as a notebook stores
 * it (encoding "gzip+base64"; the same bytes, so the same text Python's pack writes); a stored one as it is; null
 * for anything else. */
export function storedFromLive(packed: unknown): Record<string, unknown> | null {
  if (!isObj(packed) || typeof packed.kind !== "string") return null;
  if (packed.encoding === PACKED_ENCODING && typeof packed.body === "string") return packed;
  if (packed.encoding !== BINARY_ENCODING) return null;
  const body = packed.body;
  const bytes = body instanceof ArrayBuffer ? new Uint8Array(body)
    : ArrayBuffer.isView(body) ? new Uint8Array(body.buffer, body.byteOffset, body.byteLength) : null;
  if (bytes === null) return null;
  return { ...packed, encoding: PACKED_ENCODING, body: base64(bytes) };
}

/** The output's data and metadata with `change` written in (its payload under its mime type, its name in
 * metadata.flowlab.view), or null when the output already says exactly that (nothing to save: the notebook stays
 * clean) or the change cannot be stored. */
export function savedUpdate(data: Bundle, metadata: Bundle, change: ViewChange): { data: Record<string, unknown>; metadata: Record<string, unknown> } | null {
  const stored = storedFromLive(change.packed);
  if (stored === null) return null;
  const mime = mimeOfView(change.view);
  if (MIME_TYPES[stored.kind as keyof typeof MIME_TYPES] !== mime) return null;  // a view name that does not fit its payload
  const old = data[mime];
  const sameBody = isObj(old) && old.body === stored.body && old.title === stored.title;
  if (sameBody && chosenMime(data, metadata) === mime && (savedViewName(metadata) ?? change.view) === change.view) return null;
  const fl = isObj(metadata.flowlab) ? metadata.flowlab : {};
  return { data: { ...data, [mime]: stored }, metadata: { ...metadata, flowlab: { ...fl, view: change.view } } };
}
