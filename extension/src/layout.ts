// Layout off the page's thread: the worker runs layoutcore.ts (dagre; chosen over ELK, see extension/README.md).
import { type Layout, layoutSync } from "./layoutcore.js";
import type { Visible } from "./visible.js";
import { WORKER_CODE } from "./worker-code.generated.js";

export * from "./layoutcore.js";

let worker: Worker | null | undefined;  // undefined: not tried yet; null: unavailable (CSP, jsdom), lay out in-thread
let nextId = 0;
const waiting = new Map<number, { resolve: (l: Layout) => void; reject: (e: Error) => void }>();

function getWorker(): Worker | null {
  if (worker !== undefined) return worker;
  try {
    const url = URL.createObjectURL(new Blob([WORKER_CODE], { type: "text/javascript" }));
    worker = new Worker(url);
    worker.onmessage = (e: MessageEvent) => {
      const { id, layout, error } = e.data as { id: number; layout?: Layout; error?: string };
      const w = waiting.get(id);
      waiting.delete(id);
      if (layout) w?.resolve(layout);
      else w?.reject(new Error(error ?? "layout failed"));
    };
    worker.onerror = () => {
      // A worker that cannot start (e.g. a page whose CSP forbids blob: workers): lay out in-thread from now on.
      worker?.terminate();
      worker = null;
      for (const [id, w] of waiting) { waiting.delete(id); w.reject(new Error("worker unavailable")); }
    };
  } catch {
    worker = null;
  }
  return worker;
}

function inThread(v: Visible, edgeLabels: boolean): Promise<Layout> {
  return new Promise((resolve, reject) => {
    setTimeout(() => {
      try { resolve(layoutSync(v, edgeLabels)); } catch (e) { reject(e); }
    }, 0);
  });
}

/**
 * Lay out in a Web Worker, so the page stays live while dagre runs (up to about a second for ~300 boxes in nested
 * groups on a slow machine); where no worker can start, on the next task in this thread.
 */
export async function layoutAsync(v: Visible, edgeLabels = true): Promise<Layout> {
  const w = typeof Worker === "undefined" ? null : getWorker();
  if (!w) return inThread(v, edgeLabels);
  const id = nextId++;
  try {
    return await new Promise<Layout>((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      w.postMessage({ id, v, labels: edgeLabels });
    });
  } catch {
    return inThread(v, edgeLabels);
  }
}
