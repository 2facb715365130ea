// One stylesheet for the widget and the mime renderer, inserted once per document. Colours are explicit (not
// inherited from the theme) so that highlighted rows stay readable; the surfaces, text and lines are variables with a
// dark set under JupyterLab's dark theme (body[data-jp-theme-light=false]). Boxes keep their light fills and dark
// text in both themes (a highlighted box is a light patch with dark text either way), so node colours need no pair.
const CSS = `
.fl-root{--fl-fg:#222;--fl-muted:#666;--fl-bg:#fff;--fl-panel:#fcfcfc;--fl-pane:#fafafa;--fl-line:#ccc;--fl-soft:#ddd;--fl-btn:#f4f4f4;--fl-btn-hover:#e6eefc;--fl-head:#eef2f7;--fl-row-hover:#eef5ff;--fl-cluster:#f7f9fc;--fl-cluster1:#eef3f9;--fl-cluster2:#e5edf6;--fl-cluster-head:#dde7f3;--fl-cluster-line:#9fb3cc;--fl-cluster-fg:#234;--fl-edge:#666;--fl-edge-ctrl:#aaa;--fl-edge-label:#335;--fl-halo:#fff;--fl-link:#1f63d6;--fl-warn:#a05a00;--fl-err-fg:#a40000;--fl-err-bg:#fff0f0;--fl-mm:rgba(255,255,255,.92)}
body[data-jp-theme-light="false"] .fl-root,.fl-root.fl-dark{--fl-fg:#e6e6e6;--fl-muted:#aab;--fl-bg:#1e1f22;--fl-panel:#25272b;--fl-pane:#23252a;--fl-line:#4a4d55;--fl-soft:#3a3d44;--fl-btn:#34373e;--fl-btn-hover:#444a56;--fl-head:#2f333b;--fl-row-hover:#2d3a4f;--fl-cluster:#262a31;--fl-cluster1:#2b3039;--fl-cluster2:#313843;--fl-cluster-head:#39424f;--fl-cluster-line:#5a6b82;--fl-cluster-fg:#dfe8f3;--fl-edge:#9aa0aa;--fl-edge-ctrl:#7a808a;--fl-edge-label:#cfd6e0;--fl-halo:#1e1f22;--fl-link:#8ab4ff;--fl-warn:#ffb454;--fl-err-fg:#ffb3b3;--fl-err-bg:#3a1f22;--fl-mm:rgba(30,31,34,.92)}
.fl-root{font:13px/1.35 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fl-fg);background:var(--fl-bg);border:1px solid var(--fl-line);border-radius:4px;padding:6px;box-sizing:border-box}
.fl-root *{box-sizing:border-box}
.fl-title{font-weight:600;margin:0 0 4px}
.fl-error{color:var(--fl-err-fg);background:var(--fl-err-bg);border:1px solid #e0a0a0;padding:6px 8px;border-radius:4px;white-space:pre-wrap}
.fl-fallback{white-space:pre-wrap;font:12px monospace;max-height:300px;overflow:auto;background:var(--fl-pane);color:var(--fl-fg);padding:6px}
.fl-muted{color:var(--fl-muted)}
.fl-toolbar{display:flex;flex-wrap:wrap;gap:4px;align-items:center;margin-bottom:4px}
.fl-toolbar button,.fl-root button{font:12px system-ui,sans-serif;padding:2px 8px;border:1px solid var(--fl-line);background:var(--fl-btn);color:var(--fl-fg);border-radius:3px;cursor:pointer}
.fl-root button:hover{background:var(--fl-btn-hover)}
.fl-views{display:inline-flex;gap:0}.fl-views button{border-radius:0}.fl-views button:first-child{border-radius:3px 0 0 3px}.fl-views button:last-child{border-radius:0 3px 3px 0}.fl-root .fl-views button.fl-view-on{background:var(--fl-btn-hover);font-weight:600}
.fl-root input,.fl-root select{color:var(--fl-fg);background:var(--fl-bg);border:1px solid var(--fl-line);border-radius:3px;padding:2px 4px}
.fl-root input::placeholder{color:var(--fl-muted);opacity:1}
.fl-search{width:210px;padding:2px 6px}
.fl-count{color:var(--fl-muted);min-width:70px}
.fl-lanes{display:inline-flex;flex-wrap:nowrap;white-space:nowrap;gap:6px;align-items:center;margin-left:8px;color:var(--fl-fg);font-size:12px}
.fl-lane-chip{display:inline-flex;gap:2px;align-items:center}
.fl-swatch{display:inline-block;width:10px;height:10px;border-radius:2px}
.fl-body{display:flex;gap:6px;align-items:stretch}
.fl-canvas{position:relative;flex:1 1 auto;min-width:200px;min-height:160px;border:1px solid var(--fl-soft);background:var(--fl-bg);overflow:hidden;resize:vertical;touch-action:none}
.fl-svg{position:absolute;inset:0;width:100%;height:100%;cursor:grab;user-select:none}
.fl-svg:active{cursor:grabbing}
.fl-detail{flex:0 0 300px;max-height:600px;overflow:auto;border:1px solid var(--fl-soft);padding:6px;background:var(--fl-pane);color:var(--fl-fg);word-break:break-word}
.fl-detail-title{font-weight:600;margin-bottom:4px}
.fl-detail-section{font-weight:600;margin:6px 0 2px;color:var(--fl-fg)}
table.fl-kv{border-collapse:collapse;width:100%}
table.fl-kv th{width:1%;text-align:left;font-weight:500;color:var(--fl-muted);padding:1px 6px 1px 0;vertical-align:top;white-space:nowrap}
table.fl-kv td{color:var(--fl-fg);background:none;padding:1px 0;font-family:ui-monospace,monospace;font-size:12px}
.fl-status{position:absolute;left:8px;top:6px;color:var(--fl-muted);pointer-events:none}
.fl-minimap{position:absolute;right:6px;bottom:6px;width:170px;height:120px;background:var(--fl-mm);border:1px solid var(--fl-line);cursor:crosshair;opacity:.45;transition:opacity .15s}
.fl-minimap:hover{opacity:1}
.fl-mm-cluster{fill:none;stroke:var(--fl-cluster-line);stroke-width:2px;vector-effect:non-scaling-stroke}
.fl-mm-node{fill:#9ab}
.fl-mm-view{fill:rgba(255,127,14,.12);stroke:#e6550d;stroke-width:1.5px;vector-effect:non-scaling-stroke}
.fl-full{position:fixed!important;inset:0;z-index:10000;background:var(--fl-bg);padding:8px}
.fl-full .fl-canvas{height:calc(100vh - 60px)!important}
.fl-full .fl-detail{max-height:calc(100vh - 60px)}
.fl-cluster-box{fill:var(--fl-cluster);stroke:var(--fl-cluster-line);stroke-width:1px}
.fl-cluster.depth-1 .fl-cluster-box{fill:var(--fl-cluster1)}
.fl-cluster.depth-2 .fl-cluster-box{fill:var(--fl-cluster2)}
.fl-cluster-head{fill:var(--fl-cluster-head);cursor:pointer}
.fl-cluster-label{font-size:12px;font-weight:600;fill:var(--fl-cluster-fg);cursor:pointer}
.fl-node{cursor:pointer}
.fl-node .fl-shape{fill:#fff;stroke:#445;stroke-width:1px}
.fl-node.kind-op .fl-shape{fill:#f3f7ff}
.fl-node.kind-interface .fl-shape{fill:#eaf7ea;stroke:#3a7a3a}
.fl-node.kind-regst .fl-shape{fill:#fffbe6;stroke:#a08a20}
.fl-node.kind-memblock .fl-shape{fill:#f3e8fb;stroke:#8e44ad;stroke-width:2px;stroke-dasharray:5 2}
.fl-node.fl-group-box .fl-shape{fill:#dde7f3;stroke:#456;stroke-width:1.5px}
.fl-node.fl-group-box .fl-shape-inner{fill:none;stroke:#9fb3cc}
.fl-node .fl-label{font-size:12px;text-anchor:middle;fill:#111}
.fl-node .fl-type{font-size:10px;text-anchor:middle;fill:#454555}
.fl-edge path{fill:none;stroke:var(--fl-edge)}
.fl-edge.kind-ctrl path{stroke:var(--fl-edge-ctrl);stroke-dasharray:4 3}
.fl-edge.kind-shared_mem path{stroke:#8e44ad;stroke-width:2.5px;stroke-dasharray:7 3}
.fl-edge.aux path{stroke-opacity:.35}
.fl-edge-label{font-size:10px;text-anchor:middle;fill:var(--fl-edge-label);paint-order:stroke;stroke:var(--fl-halo);stroke-width:3px}
.fl-node.c-added .fl-shape{fill:#b9efc2;stroke:#1a7f37;stroke-width:2.5px}
.fl-node.c-removed .fl-shape{fill:#ffc9c9;stroke:#c62828;stroke-width:2.5px;stroke-dasharray:6 3}
.fl-node.c-changed .fl-shape{fill:#ffd8a8;stroke:#d9480f;stroke-width:2.5px}
.fl-node.c-out-added:not(.c-added) .fl-shape{stroke:#1a7f37;stroke-width:3px;stroke-dasharray:3 2}
.fl-node.c-out-removed:not(.c-removed) .fl-shape{stroke:#c62828;stroke-width:3px;stroke-dasharray:3 2}
.fl-node.c-out-changed:not(.c-changed) .fl-shape{stroke:#d9480f;stroke-width:3px;stroke-dasharray:3 2}
.fl-diff-legend{display:inline-flex;flex-wrap:wrap;gap:8px;align-items:center;margin-left:8px;font-size:12px;color:var(--fl-fg)}
.fl-diff-chip{display:inline-flex;gap:4px;align-items:center}
.fl-diff-swatch{display:inline-block;width:14px;height:12px;border-radius:2px;border:2px solid #445;background:#fff}
.fl-diff-swatch.c-added{background:#b9efc2;border-color:#1a7f37}.fl-diff-swatch.c-removed{background:#ffc9c9;border:2px dashed #c62828}
.fl-diff-swatch.c-changed{background:#ffd8a8;border-color:#d9480f}.fl-diff-swatch.c-out-added{border:2px dashed #1a7f37}
.fl-diff-swatch.c-out-removed{border:2px dashed #c62828}.fl-diff-swatch.c-out-changed{border:2px dashed #d9480f}
.fl-compare-panes{display:flex;gap:8px;align-items:flex-start}
.fl-compare-pane{flex:1 1 0;min-width:0}
.fl-compare-pane .fl-diff-legend{display:none}
.fl-compare-pane .fl-body{flex-direction:column}
.fl-compare-pane .fl-detail{flex:0 0 auto;max-height:220px}
.fl-compare-head{font-weight:600;margin:2px 0}
.fl-compare-list{max-height:220px;overflow:auto;font-size:12px}
.fl-compare-list li{margin:1px 0}
.fl-compare-list .fl-diff-swatch{margin-right:4px;vertical-align:middle}
.fl-node.match .fl-shape{fill:#fff1a8;stroke:#d08c00;stroke-width:3px}
.fl-node.current .fl-shape{stroke:#e6550d;stroke-width:4px}
.fl-node.sel .fl-shape{fill:#d7e9ff;stroke:#1f63d6;stroke-width:3px}
.fl-node.sel.c-added .fl-shape{fill:#b9efc2}.fl-node.sel.c-removed .fl-shape{fill:#ffc9c9}.fl-node.sel.c-changed .fl-shape{fill:#ffd8a8}
.fl-node.next .fl-shape{fill:#ffd27a;stroke:#e6550d;stroke-width:4px}
.fl-node.culprit .fl-shape{fill:#ffb3b3;stroke:#a61e1e;stroke-width:5px}
.fl-mark-key{display:flex;gap:6px;align-items:center;margin-top:4px}
.fl-mark-swatch{display:inline-block;width:14px;height:10px;border-radius:2px}
.fl-mark-swatch.culprit{background:#ffb3b3;border:2px solid #a61e1e}
.fl-mark-swatch.next{background:#ffd27a;border:2px solid #e6550d;margin-left:8px}
.fl-node.acting .fl-shape{fill:#ffb366;stroke:#c0390b;stroke-width:4px}
.fl-node.written .fl-shape{fill:#c9f2c9;stroke:#2a8a2a;stroke-width:3px}
.fl-node.read .fl-shape{stroke:#2a6ad6;stroke-width:3px}
.fl-panel{margin-top:6px;border:1px solid var(--fl-soft);padding:6px;background:var(--fl-panel);color:var(--fl-fg)}
.fl-panel h4{margin:0 0 4px;font-size:13px}
.fl-row{display:flex;gap:6px;align-items:center;flex-wrap:wrap}
.fl-slider{flex:1 1 300px}
.fl-mem{overflow-x:auto;overflow-y:hidden}
.fl-mem .total{fill:none;stroke:#8a5cc2;stroke-width:1.5px}
.fl-mem .fl-link{fill:var(--fl-link)}
.fl-mem .bar{fill:#9bc3e6;stroke:#4a78a8;stroke-width:.5px;vector-effect:non-scaling-stroke}
.fl-mem .bar.live{fill:#f5a35c;stroke:#b85410}
.fl-mem .cursor{stroke:#d62728;stroke-width:1.5px}
.fl-mem text{font-size:10px;fill:var(--fl-fg)}
.fl-mem .occ{fill:#c7b3e6}
.fl-table-wrap{overflow:auto;max-height:420px;border:1px solid var(--fl-soft)}
table.fl-actors{border-collapse:collapse;width:100%;font-size:12px}
table.fl-actors th{position:sticky;top:0;background:var(--fl-head);color:var(--fl-fg);text-align:left;padding:2px 6px;cursor:pointer;white-space:nowrap}
table.fl-actors td{padding:2px 6px;border-top:1px solid var(--fl-soft);color:var(--fl-fg);background:var(--fl-panel);vertical-align:top}
table.fl-actors tr:hover td{background:var(--fl-row-hover);color:var(--fl-fg)}
table.fl-actors tr.next td{background:#ffe08a;color:#111}
.fl-hist rect{fill:#6a9fd4}
.fl-hist text{font-size:10px;fill:var(--fl-fg)}
.fl-link{color:var(--fl-link);text-decoration:underline;cursor:pointer}
.fl-canvas:focus{outline:2px solid #9ec1ff;outline-offset:-2px}
.fl-warn{color:var(--fl-warn);font-weight:600}
`;

export function ensureStyle(doc: Document = document): void {
  if (doc.getElementById("flowlab-style")) return;
  const st = doc.createElement("style");
  st.id = "flowlab-style";
  st.textContent = CSS;
  doc.head.append(st);
}
