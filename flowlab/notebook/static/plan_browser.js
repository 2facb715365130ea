// flowlab plan browser: draws the SVG the kernel rendered, forwards clicks and searches, shows the detail.
// Names only ever reach the page through textContent or the Graphviz SVG (whose text Graphviz escaped).
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function panZoom(canvas, inner) {
  let scale = 1, x = 0, y = 0, drag = null;
  const apply = () => { inner.style.transform = `translate(${x}px, ${y}px) scale(${scale})`; };
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    scale = Math.min(8, Math.max(0.1, scale * (ev.deltaY < 0 ? 1.1 : 1 / 1.1)));
    apply();
  });
  canvas.addEventListener("mousedown", (ev) => { drag = [ev.clientX - x, ev.clientY - y, ev.clientX, ev.clientY]; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    x = ev.clientX - drag[0]; y = ev.clientY - drag[1]; apply();
  });
  return () => { scale = 1; x = 0; y = 0; apply(); };
}

function render({ model, el: root }) {
  root.classList.add("flowlab-w", "flowlab-plan-browser");
  const bar = el("div", "bar");
  const views = el("select", "views");
  const search = el("input", "search");
  search.placeholder = "search by name";
  const reset = el("button", "", "fit");
  const debug = el("button", "cmd-debug", "debug");
  debug.addEventListener("click", () => model.send({ cmd: "debug" }));
  const drawDebug = () => { debug.style.display = model.get("can_debug") ? "" : "none"; };
  model.on("change:can_debug", drawDebug);
  drawDebug();
  bar.append(views, search, reset, debug);
  const side = el("div", "side");
  const canvas = el("div", "canvas");
  const inner = el("div");
  canvas.append(inner);
  const detail = el("pre", "detail", "click a node");
  detail.style.width = "40%";
  side.append(canvas, detail);
  canvas.style.width = "60%";
  root.append(bar, side);
  const resetView = panZoom(canvas, inner);
  reset.addEventListener("click", resetView);

  const drawViews = () => {
    views.replaceChildren(...model.get("views").map((v) => { const o = el("option", "", v); o.value = v; return o; }));
    views.value = model.get("view");
  };
  const drawSvg = () => { inner.innerHTML = model.get("svg"); drawHighlights(); };  // Graphviz output
  const drawHighlights = () => {
    const hl = new Set(model.get("highlighted"));
    inner.querySelectorAll("g.node").forEach((g) => g.classList.toggle("flowlab-hl", hl.has(g.id)));
  };
  const drawDetail = () => {
    const d = model.get("detail");
    if (!d || !d.op) { detail.textContent = "click a node"; return; }
    const lines = [d.line, "", `job: ${d.job}`, `type: ${d.op_type}`, `placement: ${d.placement}`,
      `created by: ${d.created_by}`, d.loc ? `at: ${d.loc}` : "", "", "blobs:",
      ...Object.entries(d.blobs).map(([k, v]) => `  ${k}: ${v}`), "attrs:",
      ...Object.entries(d.attrs).map(([k, v]) => `  ${k}=${v}`), "tasks:", ...d.tasks.map((t) => `  ${t}`),
      "registers:", ...d.registers.map((r) => `  ${r.name} ${r.regst}${r.mem_block ? "  [" + r.mem_block + "]" : ""}`)];
    detail.textContent = lines.filter((l) => l !== "").join("\n");
  };

  views.addEventListener("change", () => { model.send({ cmd: "show", view: views.value }); });
  search.addEventListener("input", () => { model.set("query", search.value); model.save_changes(); });
  inner.addEventListener("click", (ev) => {
    const g = ev.target.closest("g.node");
    if (!g) return;
    model.set("selected", g.id);
    model.save_changes();
  });
  model.on("change:svg", drawSvg);
  model.on("change:highlighted", drawHighlights);
  model.on("change:detail", drawDetail);
  model.on("change:views", drawViews);
  model.on("change:view", drawViews);
  drawViews(); drawSvg(); drawDetail();
}

export default { render };
