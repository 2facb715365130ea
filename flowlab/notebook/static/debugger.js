// flowlab step debugger: buttons send commands to the kernel; the kernel answers with actors, status and blobs.
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function render({ model, el: root }) {
  root.classList.add("flowlab-w", "flowlab-debugger");
  const bar = el("div", "bar");
  const buttons = [["step", "step"], ["step 10", "step_n"], ["continue", "continue"], ["end of job", "end_of_job"],
    ["break on NaN", "break_nan"], ["clear breakpoints", "clear"], ["restart", "restart"]]
    .map(([label, cmd]) => {
      const b = el("button", `cmd-${cmd}`, label);
      b.addEventListener("click", () => model.send({ cmd, n: 10 }));
      return b;
    });
  const target = el("input", "target");
  target.placeholder = "job/op to run to";
  const runTo = el("button", "cmd-run_to", "run to");
  runTo.addEventListener("click", () => model.send({ cmd: "run_to", target: target.value }));
  const blobName = el("input", "blob-name");
  blobName.placeholder = "blob, e.g. op/y_0";
  const inspect = el("button", "cmd-inspect", "inspect");
  inspect.addEventListener("click", () => model.send({ cmd: "inspect", name: blobName.value }));
  const value = el("input", "inject-value");
  value.placeholder = "value";
  value.size = 6;
  const inject = el("button", "cmd-inject", "inject");
  inject.addEventListener("click", () => model.send({ cmd: "inject", name: blobName.value, value: value.value }));
  bar.append(...buttons, target, runTo, blobName, inspect, value, inject);
  const status = el("pre", "status");
  const side = el("div", "side");
  const canvas = el("div", "canvas");
  canvas.style.width = "55%";
  const right = el("div");
  right.style.width = "45%";
  const blob = el("pre", "blob");
  const table = el("table", "actors");
  right.append(blob, table);
  side.append(canvas, right);
  root.append(bar, status, side);

  const drawSvg = () => { canvas.innerHTML = model.get("svg"); drawNext(); };  // Graphviz output
  const drawNext = () => {
    const next = model.get("next_id");
    canvas.querySelectorAll("g.node").forEach((g) => g.classList.toggle("flowlab-next", g.id === next));
  };
  const drawRows = () => {
    const head = el("tr");
    ["actor", "state", "acts", "why", "registers"].forEach((h) => head.append(el("th", "", h)));
    const rows = model.get("rows").map((r) => {
      const tr = el("tr", r.next ? "next" : "");
      [r.name, r.state, String(r.acts), r.reason, r.registers].forEach((v) => tr.append(el("td", "", v)));
      return tr;
    });
    table.replaceChildren(head, ...rows);
  };
  const bars = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  bars.setAttribute("class", "histogram");
  bars.setAttribute("width", "200");
  bars.setAttribute("height", "40");
  right.insertBefore(bars, table);
  const drawBlob = () => {
    const b = model.get("blob");
    bars.replaceChildren();
    if (!b || !b.name) { blob.textContent = ""; return; }
    blob.textContent = `${b.name} : ${b.dtype}[${b.shape.join(", ")}]\n` +
      `min ${b.min} max ${b.max} mean ${b.mean} std ${b.std} nan ${b.nan} inf ${b.inf}\n` +
      `histogram ${b.histogram.join(" ")}\n${b.preview}`;
    const top = Math.max(1, ...b.histogram);
    const width = 200 / Math.max(1, b.histogram.length);
    b.histogram.forEach((count, i) => {  // one bar per bin, drawn with DOM calls (no markup strings)
      const bar = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      const h = 38 * count / top;
      bar.setAttribute("x", String(i * width + 1));
      bar.setAttribute("y", String(40 - h));
      bar.setAttribute("width", String(Math.max(1, width - 2)));
      bar.setAttribute("height", String(h));
      bar.setAttribute("fill", "#0d6efd");
      bars.append(bar);
    });
  };
  model.on("change:svg", drawSvg);
  model.on("change:next_id", drawNext);
  model.on("change:rows", drawRows);
  model.on("change:blob", drawBlob);
  model.on("change:status", () => { status.textContent = model.get("status"); });
  drawSvg(); drawRows(); drawBlob(); status.textContent = model.get("status");
}

export default { render };
