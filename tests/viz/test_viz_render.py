"""render_svg: renderer order, errors, and that hostile names stay inert text in the SVG."""

from __future__ import annotations

import os
import shutil
import stat
import xml.etree.ElementTree as ET

import pytest

import flowlab.viz.render as render
from flowlab.ir import BlobDesc, Job, OpConf, Plan, RegstDesc, TaskProto, encode_task_id
from flowlab.ir.dtype import float32
from flowlab.viz import RenderError, render_svg, renderers, to_dot
from flowlab.viz.dotsyntax import svg_id

SVG_NS = "{http://www.w3.org/2000/svg}"
XLINK_TITLE = "{http://www.w3.org/1999/xlink}title"
HOSTILE = 'a<b&"c'
NAMES = [
    HOSTILE,
    "<script>alert(1)</script>",
    "x\\y\\",
    "&lt;not-an-entity&amp;",
    "]]><!-- -->",
    'q"]; evil [label="pwned',
]
JOB_NAME = 'job<&"\\'


def _texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


def _hostile_job() -> Job:
    ops, descs, prev = [], {}, None
    for i, name in enumerate(NAMES):
        lbn = f"{name}/out"
        ops.append(
            OpConf(
                name,
                "identity" if prev else "input",
                inputs={"in": (prev,)} if prev else {},
                outputs={"out": (lbn,)},
                ctrl_in_op_names=(NAMES[i - 2],) if i >= 2 else (),
                created_by="user" if i % 2 else "system",
                attrs={"note": "<b>&amp;</b>"},
            )
        )
        descs[lbn] = BlobDesc((2, 1, 5, 5), float32)
        prev = lbn
    return Job(JOB_NAME, "user", ops, descs)


def test_graphviz_pure_renders_job_names(small_job, pad_session):
    svg = render_svg(to_dot(small_job))
    assert "<svg" in svg
    root = ET.fromstring(svg)
    texts = _texts(root)
    assert "pad" in texts and "f32[2,1,5,5]" in texts and "job pad_job (user, predict)" in texts
    job_set_texts = "\n".join(_texts(ET.fromstring(render_svg(to_dot(pad_session.job_set)))))
    for job_id, job in enumerate(pad_session.job_set.jobs):  # Graphviz writes "-" as &#45;: compare parsed text
        assert f"[{job_id}] job {job.name} ({job.kind}" in job_set_texts
    plan_svg = render_svg(to_dot(pad_session.plan))
    plan_root = ET.fromstring(plan_svg)
    ids = {g.get("id") for g in plan_root.iter(f"{SVG_NS}g")}
    assert {f"task/{t.task_id}" for t in pad_session.plan.tasks} <= ids
    assert {svg_id("job", n) for n in pad_session.plan.job_names} <= ids


def test_hostile_names_are_escaped_and_inert_in_job_svg():
    job = _hostile_job()
    dot = to_dot(job)
    assert '"a<b&amp;\\"c\\ninput"' in dot  # the label: one quoted DOT string
    svg = render_svg(dot)
    assert "<script" not in svg.lower()
    root = ET.fromstring(svg)  # well-formed XML
    assert not list(root.iter(f"{SVG_NS}script"))
    assert "a&lt;b&amp;&quot;c" in svg  # shown escaped ...
    texts = _texts(root)
    for name in NAMES:  # ... and reads back exactly (no entity decoding, no lost backslashes)
        assert name in texts, (name, texts)
    groups = {g.get("id"): g for g in root.iter(f"{SVG_NS}g")}
    for name in NAMES:
        node = groups[svg_id("op", JOB_NAME, name)]
        titles = [a.get(XLINK_TITLE) for a in node.iter(f"{SVG_NS}a")]
        assert any(t and t.startswith(name + "\n") for t in titles), titles
    assert f"job {JOB_NAME} (user)" in texts
    # no element or attribute came from a name: only Graphviz's own SVG vocabulary
    allowed = {"svg", "g", "title", "polygon", "ellipse", "path", "text", "a", "polyline"}
    assert {el.tag.removeprefix(SVG_NS) for el in root.iter()} <= allowed
    for el in root.iter():
        assert not any(k.lower().startswith("on") for k in el.attrib), el.attrib
        assert "{http://www.w3.org/1999/xlink}href" not in el.attrib and "href" not in el.attrib


def test_hostile_names_are_escaped_and_inert_in_plan_svg():
    t0, t1 = encode_task_id(0, 0, 0), encode_task_id(0, 1, 0)
    op0 = OpConf(HOSTILE, "input", outputs={"out": (f"{HOSTILE}/out",)})
    op1 = OpConf(NAMES[1], "identity", inputs={"in": (f"{HOSTILE}/out",)}, outputs={"out": ("s/out",)})
    data = RegstDesc(0, t0, (t1,), 2, "data", {f"{HOSTILE}/out": BlobDesc((3,), float32)})
    ctrl = RegstDesc(1, t0, (t1,), 1, "ctrl")
    plan = Plan(
        (
            TaskProto("NormalForward", 0, 0, t0, 0, 0, 0, (op0,), {"out": data, "out_ctrl": ctrl}, {}),
            TaskProto("NormalForward", 0, 1, t1, 0, 1, 1, (op1,), {}, {"in": (0,), "in_ctrl": (1,)}),
        ),
        (),
        (JOB_NAME,),
        ("user",),
        (),
        {},
    )
    svg = render_svg(to_dot(plan))
    assert "<script" not in svg.lower()
    root = ET.fromstring(svg)
    texts = _texts(root)
    assert HOSTILE in texts and f"job 0 {JOB_NAME} (user)" in texts
    assert "regst:0:2" in texts and "regst:1:1" in texts
    assert "a&lt;b&amp;&quot;c" in svg


def _write_script(path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.skipif(os.name == "nt", reason="uses a shell script as the renderer")
def test_flowlab_dot_comes_first(tmp_path, monkeypatch):
    fake = _write_script(tmp_path / "fakedot", 'cat > /dev/null; echo "<svg id=\\"fake\\"/>"\n')
    monkeypatch.setenv("FLOWLAB_DOT", fake)
    assert renderers()[0].source == "$FLOWLAB_DOT" and renderers()[0].path == fake
    assert render_svg("digraph { a }") == '<svg id="fake"/>\n'


def test_broken_flowlab_dot_falls_back_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWLAB_DOT", str(tmp_path / "no-such-dot"))
    with pytest.warns(UserWarning, match="FLOWLAB_DOT did not work"):
        svg = render_svg("digraph { a -> b }")
    assert "<svg" in svg


def test_no_renderer_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWLAB_DOT", str(tmp_path / "missing-dot"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(render, "_graphviz_pure", lambda: None)
    with pytest.raises(RenderError) as info:
        render_svg("digraph { a }")
    message = str(info.value)
    assert "$FLOWLAB_DOT" in message and "dot on PATH" in message and "graphviz-pure" in message
    assert [what for _, what in info.value.attempts] == ["not found"] * 3


@pytest.mark.skipif(os.name == "nt", reason="uses a shell script as the renderer")
def test_failing_and_slow_renderers_are_reported(tmp_path, monkeypatch):
    sleep = shutil.which("sleep")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(render, "_graphviz_pure", lambda: None)
    _write_script(tmp_path / "dot", "echo 'Error: syntax error in line 1' >&2; exit 3\n")
    with pytest.raises(RenderError, match="exit status 3: Error: syntax error in line 1"):
        render_svg("digraph {")
    monkeypatch.setenv("FLOWLAB_DOT", _write_script(tmp_path / "slow", f"exec {sleep} 5\n"))
    with pytest.raises(RenderError, match="timed out after 0.2 s"):
        render_svg("digraph { a }", timeout=0.2)


def test_bad_dot_from_graphviz_pure_is_an_error(monkeypatch):
    monkeypatch.delenv("FLOWLAB_DOT", raising=False)
    with pytest.raises(RenderError, match="graphviz-pure"):
        render_svg("digraph { a -> }")


@pytest.mark.skipif(os.name == "nt", reason="uses a shell script as the renderer")
def test_the_error_says_what_really_failed(tmp_path, monkeypatch):
    """Only a missing renderer is told to install one; a timeout says the graph is too large, a failure says
    which renderer failed (issue 10: a 535-task Plan timed out and was told to install graphviz-pure)."""
    sleep = shutil.which("sleep")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(render, "_graphviz_pure", lambda: _write_script(tmp_path / "gvp", f"exec {sleep} 5\n"))
    with pytest.raises(RenderError) as info:
        render_svg("digraph { a }", timeout=0.2)
    message = str(info.value)
    assert "pip install" not in message and "too large to lay out within 0.2 s" in message
    assert "fewer nodes" in message
    monkeypatch.setattr(render, "_graphviz_pure", lambda: _write_script(tmp_path / "bad", "exit 2\n"))
    with pytest.raises(RenderError) as info:
        render_svg("digraph { a }")
    message = str(info.value)
    assert "pip install" not in message and "failed on this graph" in message
    monkeypatch.setattr(render, "_graphviz_pure", lambda: None)
    with pytest.raises(RenderError, match="pip install graphviz-pure"):
        render_svg("digraph { a }")
