"""Sizes and times of the view payloads and of %%flowjob (issue 10's budgets).

- the seed job and the 30-layer MLP train job (754 tasks): jobset and plan payloads (target: well under 1 s),
  their JSON size, visible boxes, and the bounded SVG overview;
- a synthetic 10,000-task Plan (benchmarks/plan_svg.py's generator): its payload (target <= 1 s);
- %%flowjob of the 30-layer train job in an IPython shell with a warm cache, output bundle included, as a live
  kernel makes it (target <= 3 s).

    .venv/bin/python benchmarks/payload_size_time.py [--quick] [--cpu]

With --cpu (this thread's CPU time, steady on a loaded machine) the SVG rows leave out the Graphviz subprocess.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's flowlab, and tests.deep_mlp

import numpy as np
from _util import QUICK, median_time, table
from plan_svg import synthetic_plan

import flowlab as flow
import flowlab.typing as tp
from flowlab.viz.payload import jobset_payload, plan_payload
from flowlab.viz.payload_graph import visible_count
from flowlab.viz.payload_svg import payload_svg
from tests.deep_mlp import DEEP_MLP, DEEP_MLP_CALL, build_deep_mlp


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
        out.append((f"{name}: {kind} bounded SVG overview", f"{svg_seconds * 1e3:.0f} ms"))
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
            FLOWJOB_BYTES.append(", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in sizes.items())
                                 + f"; in the .ipynb {notebook_bytes(bundle) / 2**20:.1f} MiB")

    once()  # warm: Numba kernels, imports
    try:
        return median_time(once, repeat)
    finally:
        InteractiveShell.clear_instance()


def main() -> None:
    repeat = 3 if QUICK else 7
    rows = rows_for("seed pad_Job", seed_session(), repeat)
    rows += rows_for("30-layer MLP train", build_deep_mlp(), repeat)
    plan = synthetic_plan(10_000, n_jobs=8, n_threads=4)
    payload = plan_payload(plan)
    seconds = median_time(lambda: plan_payload(plan), repeat)
    rows.append((f"synthetic 10,000-task Plan: plan payload ({visible_count(payload['graph'])} visible)",
                 f"{seconds * 1e3:.0f} ms, {len(json.dumps(payload)) / 2**20:.1f} MiB (target <= 1 s)"))
    svg = median_time(lambda: payload_svg(payload), 1)
    rows.append(("synthetic 10,000-task Plan: bounded SVG overview", f"{svg * 1e3:.0f} ms"))
    rows.append(("%%flowjob 30-layer MLP train job, warm, with its output bundle",
                 f"{flowjob_seconds(max(1, repeat // 2)):.2f} s (target <= 3 s)"))
    rows.append(("%%flowjob 30-layer MLP train job: output size", FLOWJOB_BYTES[0]))
    table("view payloads and %%flowjob", rows)
    flow.clear_default_session()


if __name__ == "__main__":
    main()
