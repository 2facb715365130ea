"""Graphviz expands ``\\N`` (node name), ``\\G`` (graph name), ``\\E``, ``\\T``, ``\\H``, ``\\L`` in labels and
tooltips; a name holding a backslash must still show verbatim in both, in job graphs and Plan graphs."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from flowlab.ir import BlobDesc, Job, OpConf, Plan, RegstDesc, TaskProto, encode_task_id
from flowlab.ir.dtype import float32
from flowlab.viz import render_svg, to_dot
from flowlab.viz.dotsyntax import svg_id

SVG_NS = "{http://www.w3.org/2000/svg}"
XLINK_TITLE = "{http://www.w3.org/1999/xlink}title"
NAMES = ["a\\Nb", "g\\Gh", "e\\Ef", "t\\Tu", "h\\Hi", "l\\Lm", "n\\nm", "x\\\\N", "end\\"]
JOB = "job\\G\\N"


def _svg(dot: str) -> ET.Element:
    return ET.fromstring(render_svg(dot))


def _titles(element: ET.Element) -> list[str]:
    return [a.get(XLINK_TITLE) or "" for a in element.iter(f"{SVG_NS}a")]


def _texts(element: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in element.iter(f"{SVG_NS}text")]


@pytest.mark.parametrize("name", NAMES)
def test_job_graph_shows_backslash_names_verbatim(name):
    lbn = f"{name}/out"
    ops = (OpConf(name, "input", outputs={"out": (lbn,)}),
           OpConf("sink", "identity", inputs={"in": (lbn,)}, outputs={"out": ("sink/out",)}))
    job = Job(JOB, "user", ops, {lbn: BlobDesc((2,), float32), "sink/out": BlobDesc((2,), float32)})
    root = _svg(to_dot(job))
    node = {g.get("id"): g for g in root.iter(f"{SVG_NS}g")}[svg_id("op", JOB, name)]
    assert name in _texts(node)  # the label
    assert _titles(node)[0].split("\n")[0] == name  # the tooltip's first line
    edge_titles = [t for t in _titles(root) if t.startswith(lbn)]
    assert edge_titles and edge_titles[0].startswith(f"{lbn} -> sink.in_0"), _titles(root)
    assert f"job {JOB} (user)" in _texts(root)


@pytest.mark.parametrize("name", NAMES)
def test_plan_graph_shows_backslash_names_verbatim(name):
    t0, t1 = encode_task_id(0, 0, 0), encode_task_id(0, 1, 0)
    op0 = OpConf(name, "input", outputs={"out": (f"{name}/out",)})
    op1 = OpConf("sink", "identity", inputs={"in": (f"{name}/out",)}, outputs={"out": ("sink/out",)})
    data = RegstDesc(0, t0, (t1,), 1, "data", {f"{name}/out": BlobDesc((3,), float32)})
    plan = Plan(
        (TaskProto("NormalForward", 0, 0, t0, 0, 0, 0, (op0,), {"out": data}, {}),
         TaskProto("NormalForward", 0, 1, t1, 0, 1, 1, (op1,), {}, {"in": (0,)})),
        (), (JOB,), ("user",), (), {},
    )
    root = _svg(to_dot(plan))
    task = {g.get("id"): g for g in root.iter(f"{SVG_NS}g")}[f"task/{t0}"]
    assert name in _texts(task)
    assert name in _titles(task)[0].split("\n")
    assert any(f"{name}/out: f32[3]" in t.split("\n") for t in _titles(root)), _titles(root)
