// The structured detail pane (payload `details`): a title and sections of key/value rows, all inserted as text.
import { h, kvTable } from "./dom.js";
import type { Graph } from "./payload.js";

export function renderDetail(pane: HTMLElement, graph: Graph, id: string | null, hint = "click a node to see its details"): void {
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
    if (node.lane) facts.push(["lane", node.lane]);
  } else if (group) facts.push(["group", group.kind]);
  pane.append(kvTable(facts));
  for (const sec of d?.sections ?? []) {
    pane.append(h("div", "fl-detail-section", sec.title), kvTable(sec.rows));
  }
}
