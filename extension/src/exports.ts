// Export buttons (issue 24): the graph as it is drawn now, as an SVG file or a PNG picture, and the debugger's
// recorded trace as JSON. The graph's look comes from the page's stylesheet (style.ts), which a saved SVG file does not
// carry: the copy gets each element's computed paint and font written on it, so the file looks like the view.
import { button } from "./dom.js";

const PAINT = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray", "opacity",
  "font-family", "font-size", "font-weight", "font-style", "text-anchor", "dominant-baseline", "paint-order",
  "visibility", "display"] as const;

/** A standalone SVG document of `svg` as shown (its current size, pan and zoom), with its styles inlined. */
export function svgText(svg: SVGSVGElement): string {
  const copy = svg.cloneNode(true) as SVGSVGElement;
  const from = [svg, ...svg.querySelectorAll("*")], to = [copy, ...copy.querySelectorAll("*")];
  const view = svg.ownerDocument.defaultView;
  from.forEach((el, k) => {
    const cs = view?.getComputedStyle(el);
    if (!cs) return;
    const style = PAINT.map((p) => `${p}:${cs.getPropertyValue(p)}`).join(";");
    (to[k] as Element).setAttribute("style", style);
  });
  const box = svg.getBoundingClientRect();
  const w = Math.max(1, Math.round(box.width)), hgt = Math.max(1, Math.round(box.height));
  copy.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  copy.setAttribute("width", String(w));
  copy.setAttribute("height", String(hgt));
  if (!copy.getAttribute("viewBox")) copy.setAttribute("viewBox", `0 0 ${w} ${hgt}`);
  const bg = view?.getComputedStyle(svg.parentElement ?? svg).backgroundColor;
  copy.style.background = bg && bg !== "rgba(0, 0, 0, 0)" ? bg : "#ffffff";
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(copy)}`;
}

/** The SVG text drawn on a canvas (at the device's pixel ratio, at least 1) as a PNG. */
export async function pngBlob(text: string, width: number, height: number): Promise<Blob> {
  const img = new Image();
  const url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
  try {
    await new Promise<void>((ok, fail) => {
      img.onload = () => ok();
      img.onerror = () => fail(new Error("the graph's SVG did not load as an image"));
      img.src = url;
    });
    const scale = Math.max(1, globalThis.devicePixelRatio || 1);
    const canvas = document.createElement("canvas");
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(height * scale);
    const ctx = canvas.getContext("2d");
    if (!ctx) throw new Error("no 2D canvas to draw the PNG on");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise<Blob>((ok, fail) => canvas.toBlob((b) => (b ? ok(b) : fail(new Error("PNG encoding failed"))), "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Save `blob` as a file named `name` (the browser's download). */
export function download(name: string, blob: Blob): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/** "SVG" and "PNG" buttons that save the graph under `root` (a GraphView's root) as drawn now. */
export function graphExportButtons(root: () => HTMLElement | null | undefined, name: string): HTMLButtonElement[] {
  const svgOf = (): SVGSVGElement | null => root()?.querySelector<SVGSVGElement>("svg.fl-svg") ?? null;
  const file = (ext: string): string => `${name.replace(/[^\w.-]+/g, "_") || "flowlab"}.${ext}`;
  return [
    button("SVG", "save the graph as drawn now as an SVG file", () => {
      const svg = svgOf();
      if (svg) download(file("svg"), new Blob([svgText(svg)], { type: "image/svg+xml" }));
    }),
    button("PNG", "save the graph as drawn now as a PNG picture", () => {
      const svg = svgOf();
      if (!svg) return;
      const box = svg.getBoundingClientRect();
      void pngBlob(svgText(svg), box.width, box.height).then((b) => download(file("png"), b));
    }),
  ];
}
