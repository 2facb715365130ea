"""Sizes and times of the view payloads and of %%flowjob (issue 10's budgets).

- the seed job and the 30-layer MLP train job (754 tasks): jobset and plan payloads (target: well under 1 s),
  their JSON size, visible boxes, and the bounded SVG overview;
- what a notebook stores of them: version 1 (as it was) and version 2 (viz/payload_pack.py, gzipped), in the
  bytes nbformat writes, and the time to pack (target: version 2 at least 3x smaller for the 30-layer job);
- the draw time of a stored payload in chromium (the e2e harness, as the mime renderer draws it: JSON text ->
  decode -> parse -> laid-out view), version 1 against version 2 in interleaved rounds (medians; skipped with a
  note where chromium or Playwright is missing);
- a synthetic 10,000-task Plan (benchmarks/plan_svg.py's generator): its payload (target <= 1 s) and its sizes;
- the live widget (benchmarks/_live_comm.py): the payload's bytes over the comm and the time from creating the widget
  to its first box in a live JupyterLab, for the 30-layer Plan and the 10,000-task Plan, version 1 against version 2
  (base64 and binary body), and the widget state a notebook saves;
- the live step debugger of the 30-layer job (benchmarks/_live_debugger.py): the bytes one step sends over the comm
  and the time from the click to the changed view, the whole state (as before) against the delta (now);
- %%flowjob of the 30-layer train job in an IPython shell with a warm cache, output bundle included, as a live
  kernel makes it (target <= 3 s), and what its output adds to the .ipynb: version-1 payloads and every stage as
  text/plain (as it was), version 2 with that text, version 2 with the bounded text/plain (now).

    .venv/bin/python benchmarks/payload_size_time.py [--quick] [--cpu]

With --cpu (this thread's CPU time, steady on a loaded machine) the SVG rows leave out the Graphviz subprocess.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's flowlab, and tests.deep_mlp

import numpy as np
from _live_comm import live_rows, saved_state_row
from _live_debugger import debugger_rows, publish_rows
from _util import QUICK, median_time, table
from plan_svg import synthetic_plan

import flowlab as flow
import flowlab.typing as tp
from flowlab.viz.payload import jobset_payload, plan_payload
from flowlab.viz.payload_graph import visible_count
from flowlab.viz.payload_pack import pack
from flowlab.viz.payload_svg import payload_svg
from tests.helpers.deep_mlp import DEEP_MLP, DEEP_MLP_CALL, build_deep_mlp


def rows_for(name: str, session: object, repeat: int) -> list[tuple[str, str]]:
    out = []
    for kind, build in (("jobset", lambda: jobset_payload(session.job_set, session.passes)),
                        ("plan", lambda: plan_payload(session.plan, session.job_set, passes=session.passes))):
        payload = build()
        seconds = median_time(build, repeat)
        size = len(json.dumps(payload, allow_nan=False))
        graph = payload["graph"]
        svg_seconds = median_time(lambda p=payload: payload_svg(p), max(1, repeat // 2))
        out.append((f"{name}: {kind} payload ({len(graph['nodes'])} nodes, {visible_count(graph)} visible)",
                    f"{seconds * 1e3:.0f} ms, {size / 1024:.0f} KiB"))
        out.append((f"{name}: {kind} payload, what the size is", composition(graph, size)))
        out.append((f"{name}: {kind} stored in the .ipynb, v1 -> v2", stored_sizes(payload, repeat)))
        out.append((f"{name}: {kind} bounded SVG overview", f"{svg_seconds * 1e3:.0f} ms"))
        DRAWN.append((f"{name}: {kind}", payload))
    return out


DRAWN: list[tuple[str, dict]] = []  # the payloads whose stored forms draw_rows times in chromium


def stored_sizes(payload: dict, repeat: int) -> str:
    """What the payload adds to a notebook as version 1 and as version 2, and the time pack() takes."""
    kind = payload["kind"]
    v1 = notebook_bytes({f"application/vnd.flowlab.{kind}+json": payload})
    v2 = notebook_bytes({f"application/vnd.flowlab.{kind}+json": pack(payload)})
    seconds = median_time(lambda: pack(payload), repeat)
    return (f"{v1 / 1024:.0f} KiB -> {v2 / 1024:.0f} KiB ({v1 / v2:.1f}x smaller; target >= 3x), "
            f"pack {seconds * 1e3:.0f} ms")


def draw_rows(rounds: int) -> list[tuple[str, str]]:
    """Draw time in chromium of each payload in DRAWN, stored as version 1 and as version 2, interleaved."""
    from tests.e2e.harness import harness_page, missing

    why = missing()
    if why:
        return [("draw in chromium from stored JSON, v1 / v2", f"skipped: {why}")]
    out = []
    with harness_page() as page:
        for name, payload in DRAWN:
            texts = {"v1": json.dumps(payload), "v2": json.dumps(pack(payload))}
            times: dict[str, list[float]] = {"v1": [], "v2": []}
            for k in range(rounds + 1):
                for version, text in texts.items():
                    ms = page.evaluate("(t) => window.flowlab.mountStored(t)", text)
                    if k:  # round 0 warms the page (the module's JIT, the layout worker)
                        times[version].append(ms)
            a, b = statistics.median(times["v1"]), statistics.median(times["v2"])
            out.append((f"{name}: draw in chromium from stored JSON, v1 / v2",
                        f"{a:.0f} ms / {b:.0f} ms (v2 / v1 {b / a:.2f}; medians of {rounds})"))
    return out


def composition(graph: dict, size: int) -> str:
    """Which parts of a payload hold its bytes: the graph's fields, and the detail sections by title."""
    parts = {k: len(json.dumps(v)) for k, v in graph.items()}
    sections: dict[str, int] = {}
    for detail in graph["details"].values():
        for sec in detail["sections"]:
            title = sec["title"].split(" ")[0]
            sections[title] = sections.get(title, 0) + len(json.dumps(sec))
    top = sorted(sections.items(), key=lambda kv: -kv[1])[:3]
    return (", ".join(f"{k} {v * 100 / size:.0f}%" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:3])
            + "; details: " + ", ".join(f"{k} {v * 100 / size:.0f}%" for k, v in top))


def seed_session() -> object:
    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(np.zeros((2, 1, 3, 3), np.float32))
    return flow.default_session()


def notebook_bytes(bundle: dict) -> int:
    """The size one output with this bundle adds to a notebook as nbformat writes it (indented JSON)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("")
    data = {k: v for k, v in bundle.items() if k != "application/vnd.jupyter.widget-view+json"}
    nb.cells.append(cell)
    empty = len(nbformat.writes(nb))
    cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
    return len(nbformat.writes(nb)) - empty


FLOWJOB_BYTES: list[str] = []  # filled by flowjob_seconds: the output's size per mime type and in the notebook


def unpacked(bundle: dict, result: object) -> dict:
    """The same bundle with the version-1 payloads, as %%flowjob wrote it before version 2."""
    from flowlab.viz.payload import MIME

    old = dict(bundle)
    for view, payload in result.payloads().items():
        old[MIME["jobset" if view == "jobs" else "plan"]] = payload
    return old


def flowjob_seconds(repeat: int) -> float:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "flowlab")
    cell = DEEP_MLP + DEEP_MLP_CALL.replace("deep_train(", "_ = deep_train(")

    def once() -> None:
        result = shell.run_cell_magic("flowjob", "", cell)
        result.interactive = True  # the widget view too, as in a live kernel
        bundle = result._repr_mimebundle_()
        assert result.error is None and "application/vnd.flowlab.plan+json" in bundle
        if not FLOWJOB_BYTES:
            sizes = {k.split("/")[-1]: len(v if isinstance(v, str) else json.dumps(v)) for k, v in bundle.items()}
            full_text = {**bundle, "text/plain": str(result)}  # every stage as text, as text/plain was before
            before, packed = notebook_bytes(unpacked(full_text, result)), notebook_bytes(full_text)
            after = notebook_bytes(bundle)
            FLOWJOB_BYTES.append(", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in sizes.items())
                                 + f"; in the .ipynb (every stage as text/plain) {before / 2**20:.2f} MiB with v1 "
                                   f"payloads -> {packed / 2**20:.2f} MiB with v2 payloads -> {after / 2**20:.2f} MiB "
                                   f"with the bounded text/plain ({before / after:.1f}x smaller)")

    once()  # warm: Numba kernels, imports
    try:
        return median_time(once, repeat)
    finally:
        InteractiveShell.clear_instance()


def main() -> None:
    repeat = 3 if QUICK else 7
    rows = rows_for("seed pad_Job", seed_session(), repeat)
    deep = build_deep_mlp()
    rows += rows_for("30-layer MLP train", deep, repeat)
    rows.append(saved_state_row(deep))
    plan = synthetic_plan(10_000, n_jobs=8, n_threads=4)
    payload = plan_payload(plan)
    seconds = median_time(lambda: plan_payload(plan), repeat)
    rows.append((f"synthetic 10,000-task Plan: plan payload ({visible_count(payload['graph'])} visible)",
                 f"{seconds * 1e3:.0f} ms, {len(json.dumps(payload)) / 2**20:.1f} MiB (target <= 1 s)"))
    rows.append(("synthetic 10,000-task Plan: plan stored in the .ipynb, v1 -> v2", stored_sizes(payload, 1)))
    svg = median_time(lambda: payload_svg(payload), 1)
    rows.append(("synthetic 10,000-task Plan: bounded SVG overview", f"{svg * 1e3:.0f} ms"))
    rows.append(("%%flowjob 30-layer MLP train job, warm, with its output bundle",
                 f"{flowjob_seconds(max(1, repeat // 2)):.2f} s (target <= 3 s)"))
    rows.append(("%%flowjob 30-layer MLP train job: output size", FLOWJOB_BYTES[0]))
    rows += draw_rows(1 if QUICK else 5)
    rows += live_rows(1 if QUICK else 3)
    rows += publish_rows(20 if QUICK else 100)
    rows += debugger_rows(1 if QUICK else 3, 3 if QUICK else 10)
    table("view payloads and %%flowjob", rows)
    flow.clear_default_session()


if __name__ == "__main__":
    main()
