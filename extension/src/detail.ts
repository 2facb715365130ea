// The structured detail pane (payload `details`): a title and sections of key/value rows, all inserted as text.
import { h } from "./dom.js";
import type { Graph } from "./payload.js";

/** Rows as a table; a value that is the id of a node or group in this graph links to it (registers, blocks, ops). */
function rowsTable(graph: Graph, rows: [string, string][], go?: (id: string) => void): HTMLTableElement {
  const ids = new Set<string>([...graph.nodes.map((n) => n.id), ...graph.groups.map((g) => g.id)]);
  const label = new Map<string, string>([...graph.nodes.map((n) => [n.id, n.label] as [string, string]), ...graph.groups.map((g) => [g.id, g.label] as [string, string])]);
  const t = h("table", "fl-kv");
  for (const [k, v] of rows) {
    const tr = h("tr"), td = h("td");
    const parts = v.split(/(\s*,\s*)/);  // "r:5, r:9" lists link each id
    for (const part of parts) {
      if (go && ids.has(part)) {
        const a = h("a", "fl-link", label.get(part) ?? part);
        a.href = "#";
        a.title = `go to ${label.get(part) ?? part}`;
        a.addEventListener("click", (ev) => { ev.preventDefault(); go(part); });
        td.append(a);
      } else td.append(document.createTextNode(part));
    }
    tr.append(h("th", "", k), td);
    t.append(tr);
  }
  return t;
}

export function renderDetail(pane: HTMLElement, graph: Graph, id: string | null, hint = "click a node to see its details",
  go?: (id: string) => void): void {
  pane.replaceChildren();
  if (!id) {
    pane.append(h("div", "fl-muted", hint));
    return;
  }
  const node = graph.nodes.find((n) => n.id === id);
  const group = node ? undefined : graph.groups.find((g) => g.id === id);
  const d = node?.detail ? graph.details[node.detail] : undefined;
  pane.append(h("div", "fl-detail-title", d?.title ?? node?.label ?? group?.label ?? id));
  const facts: [string, string][] = [];
  if (node) {
    facts.push(["kind", node.kind]);
    if (node.type) facts.push(["type", node.type]);
    if (node.device) facts.push(["device", node.device]);
    if (node.sbp) facts.push(["sbp", node.sbp]);
    if (node.lane) facts.push(["lane", node.lane]);
  } else if (group) facts.push(["group", group.kind]);
  if (node?.parent) facts.push(["in", node.parent]);
  pane.append(rowsTable(graph, facts, go));
  for (const sec of d?.sections ?? []) {
    pane.append(h("div", "fl-detail-section", sec.title), rowsTable(graph, sec.rows, go));
  }
}
