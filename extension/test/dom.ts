// A jsdom document installed as the globals the views use.
import { JSDOM } from "jsdom";

export function installDom(): JSDOM {
  const dom = new JSDOM("<!doctype html><html><head></head><body></body></html>", { pretendToBeVisual: true });
  const g = globalThis as Record<string, unknown>;
  for (const k of ["window", "document", "Option", "Element", "HTMLElement", "SVGElement", "Node"]) {
    g[k] = k === "window" ? dom.window : (dom.window as unknown as Record<string, unknown>)[k];
  }
  g.requestAnimationFrame = (cb: () => void) => setTimeout(cb, 0);
  return dom;
}
