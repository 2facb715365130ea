"""The static picture is a fallback that never costs an output (issue 24, B1): multi-device Plans draw (Graphviz's
old cluster ranking failed with "trouble in init_rank" on every 2-device Plan), any op name a user may pick is
escaped and shown, and a renderer that fails leaves a picture that says why."""

from __future__ import annotations

import importlib
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flowlab as flow
import flowlab.typing as tp
from flowlab.frontend import scope
from flowlab.notebook.result import FlowjobResult
from flowlab.notebook.widgets import PlanBrowser
from flowlab.viz import RenderError, jobset_payload, plan_payload, render_svg, to_dot
from flowlab.viz.payload import MIME
from flowlab.viz.payload_pack import unpack
from flowlab.viz.payload_svg import payload_svg

payload_svg_module = importlib.import_module("flowlab.viz.payload_svg")  # flowlab.viz.payload_svg is the function

ODD_NAMES = ['a" -> b [label="x', "back\\slash\\N\\G", "two\nlines", "ünï©ødé → 字", "<>&{}|", 'x\\"y;', "a&lt;b"]


def build(devices: int, first: str, second: str) -> Any:
    """A fresh session with a 2-op job placed on ``devices`` CPU devices (data-parallel), run once."""
    flow.clear_default_session()
    scope.ENV.reset()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def odd_job(x: tp.Numpy.Placeholder((8, 4))) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            return flow.math.relu(flow.math.sigmoid(x, name=first), name=second)

    out = odd_job(np.full((8, 4), -1.0, np.float32))
    np.testing.assert_allclose(out, 1 / (1 + np.exp(1.0)), rtol=1e-6)
    return flow.default_session()


def svg_texts(svg: str) -> str:
    """Everything a person can read in a Graphviz SVG: the <text> lines and the tooltips, joined by newlines (the
    SVG must be well-formed XML, or this raises)."""
    root = ET.fromstring(svg.encode("utf-8"))
    out = []
    for el in root.iter():
        if el.tag.endswith("}text") and el.text:
            out.append(el.text)
        out += [v for k, v in el.attrib.items() if k.endswith("title")]
    return "\n".join(out)


def assert_shows(svg: str, name: str) -> None:
    assert "placeholder" not in svg, svg[:600]
    texts = svg_texts(svg)
    for line in name.split("\n"):
        assert line in texts, (line, texts[:2000])


@pytest.mark.parametrize("devices", [2, 4])
def test_a_multi_device_plan_draws_wrapped(devices):
    # Failed before the fix: the row-wrapped re-render raised RenderError (graphviz-pure: trouble in init_rank).
    session = build(devices, "s", "r")
    payload = plan_payload(session.plan, session.job_set)
    svg = payload_svg(payload, strict=True)
    assert_shows(svg, "System-Boxing-BoxingCopy-0")
    unwrapped = render_svg(payload_svg_module.payload_dot(payload))
    assert payload_svg_module.svg_width(svg) <= payload_svg_module.svg_width(unwrapped)  # the narrowest drawn


def test_a_2_device_flowjob_shows_its_graph():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "flowlab")
        result = ip.run_cell_magic("flowjob", "", "\n".join([
            "import numpy as np, flowlab as flow, flowlab.typing as tp",
            "flow.config.cpu_device_num(2)",
            "@flow.global_function()",
            "def dp(x: tp.Numpy.Placeholder((8, 4))) -> tp.Numpy:",
            "    with flow.scope.placement('cpu', '0:0-1'):",
            "        return flow.math.relu(x, name='fc1-relu')",
            "y = dp(np.ones((8, 4), np.float32))"]))
        bundle = result._repr_mimebundle_()
        assert {MIME["jobset"], MIME["plan"], "image/svg+xml"} <= set(bundle)
        assert_shows(bundle["image/svg+xml"], "fc1-relu")
        assert "no picture" not in bundle["text/plain"]
        browser = result.browser()
        assert_shows(browser.svg_of("plan"), "fc1-relu")
        result.interactive = True  # as under a kernel: the bundle carries the live view too (it raised before)
        live = result._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in live and MIME["plan"] in live
    finally:
        InteractiveShell.clear_instance()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(devices=st.sampled_from([1, 2, 4]),
       first=st.one_of(st.sampled_from(ODD_NAMES),
                       st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/")
                               | st.sampled_from('"\\\n<>&{}|[];'), min_size=1, max_size=14)),
       second=st.sampled_from(ODD_NAMES))
def test_any_name_on_any_device_count_draws_and_is_shown(devices, first, second):
    assume(first != second and first.strip() and first not in ("Input_0", "Return_0") and first[-1] != "\\")
    session = build(devices, first, second)
    for payload in (plan_payload(session.plan, session.job_set), jobset_payload(session.job_set, session.passes)):
        svg = payload_svg(payload, strict=True)
        assert_shows(svg, first.replace("\t", " "))
        assert_shows(svg, second)
    browser = PlanBrowser(session)
    assert_shows(browser.svg, second)
    bundle = FlowjobResult(session)._repr_mimebundle_()
    assert_shows(bundle["image/svg+xml"], second)
    labels = {n["label"] for n in unpack(bundle[MIME["plan"]])["graph"]["nodes"]}
    assert second in labels and first in labels
    # the other DOT emitters (debug files, flow.viz.to_dot) draw the same names
    for dot in (to_dot(session.job_set), to_dot(session.plan)):
        texts = svg_texts(render_svg(dot))
        assert all(line in texts for name in (first, second) for line in name.split("\n")), texts[:1000]


def test_a_failing_renderer_leaves_a_picture_that_says_why(monkeypatch):
    session = build(2, "s", "r")

    def broken(dot: str, *, timeout: float = 0) -> str:
        raise RenderError("could not render DOT to SVG; tried, in order:\n  - graphviz-pure: exit status 1: "
                          "Error: trouble in init_rank", [("graphviz-pure", "exit status 1")])

    monkeypatch.setattr(importlib.import_module("flowlab.viz.render"), "render_svg", broken)
    browser = PlanBrowser(session)  # raised RenderError before the fix
    assert browser.payload["kind"] == "plan"
    texts = svg_texts(browser.svg)
    assert "No static picture of Plan" in texts and "trouble in init_rank" in texts
    with pytest.raises(RenderError):
        payload_svg(browser.payload, strict=True)


def test_a_failing_cluster_layout_falls_back_to_a_flat_one(monkeypatch):
    session = build(2, "s", "r")
    real = payload_svg_module.payload_dot

    def no_clusters(*args, **kwargs):
        dot = real(*args, **kwargs)
        return dot + "garbage {" if kwargs.get("clusters", True) else dot  # a syntax error: the renderer fails

    monkeypatch.setattr(payload_svg_module, "payload_dot", no_clusters)
    svg = payload_svg(plan_payload(session.plan, session.job_set))
    assert_shows(svg, "r")
    assert "cluster" not in svg
