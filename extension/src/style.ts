// One stylesheet for the widget and the mime renderer, inserted once per document. Colours are explicit (not
// inherited from the theme) so that highlighted rows stay readable in dark themes.
const CSS = `
.fl-root{font:13px/1.35 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;background:#fff;border:1px solid #ccc;border-radius:4px;padding:6px;box-sizing:border-box}
.fl-root *{box-sizing:border-box}
.fl-title{font-weight:600;margin:0 0 4px}
.fl-error{color:#a40000;background:#fff0f0;border:1px solid #e0a0a0;padding:6px 8px;border-radius:4px;white-space:pre-wrap}
.fl-fallback{white-space:pre-wrap;font:12px monospace;max-height:300px;overflow:auto;background:#f6f6f6;padding:6px}
.fl-muted{color:#777}
.fl-toolbar{display:flex;flex-wrap:wrap;gap:4px;align-items:center;margin-bottom:4px}
.fl-toolbar button,.fl-root button{font:12px system-ui,sans-serif;padding:2px 8px;border:1px solid #aaa;background:#f4f4f4;color:#222;border-radius:3px;cursor:pointer}
.fl-root button:hover{background:#e6eefc}
.fl-search{width:210px;padding:2px 6px;border:1px solid #aaa;border-radius:3px;color:#222;background:#fff}
.fl-count{color:#555;min-width:70px}
.fl-lanes{display:inline-flex;flex-wrap:nowrap;white-space:nowrap;gap:6px;align-items:center;margin-left:8px;color:#444;font-size:12px}
.fl-lane-chip{display:inline-flex;gap:2px;align-items:center}
.fl-swatch{display:inline-block;width:10px;height:10px;border-radius:2px}
.fl-body{display:flex;gap:6px;align-items:stretch}
.fl-canvas{position:relative;flex:1 1 auto;min-width:200px;min-height:160px;border:1px solid #ddd;background:#fff;overflow:hidden;resize:vertical;touch-action:none}
.fl-svg{position:absolute;inset:0;width:100%;height:100%;cursor:grab;user-select:none}
.fl-svg:active{cursor:grabbing}
.fl-detail{flex:0 0 300px;max-height:600px;overflow:auto;border:1px solid #ddd;padding:6px;background:#fafafa;word-break:break-word}
.fl-detail-title{font-weight:600;margin-bottom:4px}
.fl-detail-section{font-weight:600;margin:6px 0 2px;color:#444}
table.fl-kv{border-collapse:collapse;width:100%}
table.fl-kv th{width:1%;text-align:left;font-weight:500;color:#555;padding:1px 6px 1px 0;vertical-align:top;white-space:nowrap}
table.fl-kv td{padding:1px 0;font-family:ui-monospace,monospace;font-size:12px}
.fl-status{position:absolute;left:8px;top:6px;color:#555;pointer-events:none}
.fl-minimap{position:absolute;right:6px;bottom:6px;width:170px;height:120px;background:rgba(255,255,255,.92);border:1px solid #bbb;cursor:crosshair}
.fl-mm-cluster{fill:none;stroke:#bbb;stroke-width:2px;vector-effect:non-scaling-stroke}
.fl-mm-node{fill:#9ab}
.fl-mm-view{fill:rgba(255,127,14,.12);stroke:#e6550d;stroke-width:1.5px;vector-effect:non-scaling-stroke}
.fl-full{position:fixed!important;inset:0;z-index:10000;background:#fff;padding:8px}
.fl-full .fl-canvas{height:calc(100vh - 60px)!important}
.fl-full .fl-detail{max-height:calc(100vh - 60px)}
.fl-cluster-box{fill:#f7f9fc;stroke:#9fb3cc;stroke-width:1px}
.fl-cluster.depth-1 .fl-cluster-box{fill:#eef3f9}
.fl-cluster.depth-2 .fl-cluster-box{fill:#e5edf6}
.fl-cluster-head{fill:#dde7f3;cursor:pointer}
.fl-cluster-label{font-size:12px;font-weight:600;fill:#234;cursor:pointer}
.fl-node{cursor:pointer}
.fl-node .fl-shape{fill:#fff;stroke:#445;stroke-width:1px}
.fl-node.kind-op .fl-shape{fill:#f3f7ff}
.fl-node.kind-interface .fl-shape{fill:#eaf7ea;stroke:#3a7a3a}
.fl-node.kind-regst .fl-shape{fill:#fffbe6;stroke:#a08a20}
.fl-node.kind-memblock .fl-shape{fill:#f3e8fb;stroke:#8e44ad;stroke-width:2px;stroke-dasharray:5 2}
.fl-node.fl-group-box .fl-shape{fill:#dde7f3;stroke:#456;stroke-width:1.5px}
.fl-node.fl-group-box .fl-shape-inner{fill:none;stroke:#9fb3cc}
.fl-node .fl-label{font-size:12px;text-anchor:middle;fill:#111}
.fl-node .fl-type{font-size:10px;text-anchor:middle;fill:#667}
.fl-edge path{fill:none;stroke:#666}
.fl-edge.kind-ctrl path{stroke:#aaa;stroke-dasharray:4 3}
.fl-edge.kind-shared_mem path{stroke:#8e44ad;stroke-width:2.5px;stroke-dasharray:7 3}
.fl-edge.aux path{stroke-opacity:.35}
.fl-edge-label{font-size:10px;text-anchor:middle;fill:#335;paint-order:stroke;stroke:#fff;stroke-width:3px}
.fl-node.match .fl-shape{fill:#fff1a8;stroke:#d08c00;stroke-width:3px}
.fl-node.current .fl-shape{stroke:#e6550d;stroke-width:4px}
.fl-node.sel .fl-shape{fill:#d7e9ff;stroke:#1f63d6;stroke-width:3px}
.fl-node.next .fl-shape{fill:#ffd27a;stroke:#e6550d;stroke-width:4px}
.fl-node.acting .fl-shape{fill:#ffb366;stroke:#c0390b;stroke-width:4px}
.fl-node.written .fl-shape{fill:#c9f2c9;stroke:#2a8a2a;stroke-width:3px}
.fl-node.read .fl-shape{stroke:#2a6ad6;stroke-width:3px}
.fl-panel{margin-top:6px;border:1px solid #ddd;padding:6px;background:#fcfcfc}
.fl-panel h4{margin:0 0 4px;font-size:13px}
.fl-row{display:flex;gap:6px;align-items:center;flex-wrap:wrap}
.fl-slider{flex:1 1 300px}
.fl-mem{overflow:auto;max-height:320px}
.fl-mem .bar{fill:#9bc3e6;stroke:#4a78a8;stroke-width:.5px}
.fl-mem .bar.live{fill:#f5a35c;stroke:#b85410}
.fl-mem .cursor{stroke:#d62728;stroke-width:1.5px}
.fl-mem text{font-size:10px;fill:#333}
.fl-mem .occ{fill:#c7b3e6}
.fl-table-wrap{overflow:auto;max-height:420px;border:1px solid #ddd}
table.fl-actors{border-collapse:collapse;width:100%;font-size:12px}
table.fl-actors th{position:sticky;top:0;background:#eef2f7;color:#222;text-align:left;padding:2px 6px;cursor:pointer;white-space:nowrap}
table.fl-actors td{padding:2px 6px;border-top:1px solid #eee;color:#222;vertical-align:top}
table.fl-actors tr.next td{background:#ffe08a;color:#111}
table.fl-actors tr:hover td{background:#eef5ff;color:#111}
.fl-hist rect{fill:#6a9fd4}
.fl-hist text{font-size:10px;fill:#333}
.fl-link{color:#1f63d6;text-decoration:underline;cursor:pointer}
.fl-canvas:focus{outline:2px solid #9ec1ff;outline-offset:-2px}
.fl-warn{color:#a05a00;font-weight:600}
`;

export function ensureStyle(doc: Document = document): void {
  if (doc.getElementById("flowlab-style")) return;
  const st = doc.createElement("style");
  st.id = "flowlab-style";
  st.textContent = CSS;
  doc.head.append(st);
}
