// Every string reaches the page through textContent or setAttribute: payload strings are data, never HTML.
export const SVG_NS = "http://www.w3.org/2000/svg";

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls = "", text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}, text?: string): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export function button(label: string, title: string, onClick: () => void, cls = ""): HTMLButtonElement {
  const b = h("button", cls, label);
  b.type = "button";
  b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

/** Numbers for people: NaN/Inf/null said plainly, 4 significant digits. */
export function fmt(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "NaN";
    if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "-Inf";
    if (Number.isInteger(v)) return String(v);
    return Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3 ? v.toExponential(3) : String(Number(v.toPrecision(4)));
  }
  if (Array.isArray(v)) return `[${v.map(fmt).join(", ")}]`;
  return String(v);
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A two-column table of [key, value] rows. */
export function kvTable(rows: [string, string][]): HTMLTableElement {
  const t = h("table", "fl-kv");
  for (const [k, v] of rows) {
    const tr = h("tr");
    tr.append(h("th", "", k), h("td", "", v));
    t.append(tr);
  }
  return t;
}
