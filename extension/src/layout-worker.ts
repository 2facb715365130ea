// The layout worker's entry: lays out one visible graph per message (bundled into worker-code.generated.ts).
import { layoutSync } from "./layoutcore.js";
import type { Visible } from "./visible.js";

const scope = globalThis as unknown as { onmessage: ((e: MessageEvent) => void) | null; postMessage(m: unknown): void };
scope.onmessage = (e: MessageEvent) => {
  const { id, v, labels } = e.data as { id: number; v: Visible; labels: boolean };
  try {
    scope.postMessage({ id, layout: layoutSync(v, labels) });
  } catch (err) {
    scope.postMessage({ id, error: String(err) });
  }
};
