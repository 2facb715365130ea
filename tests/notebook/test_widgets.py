"""The widgets' Python side: every browser action is a method, driven here without a browser."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.notebook.widgets import DebuggerWidget, PlanBrowser

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


@pytest.fixture
def pad_job():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)
    return pad_Job


def test_plan_browser_views_search_and_detail(pad_job):
    browser = PlanBrowser(flow.default_session())
    assert browser.views == ["jobs", "user", "push", "pull", "main", "plan"]
    assert browser.payload["kind"] == "plan" and browser.payload["flowlab_payload"] == 1
    assert "<svg" in browser.svg and "System-Main" in html.unescape(browser.svg)
    plan = flow.default_session().plan
    pad_task = plan.task("reflection_pad2d_0")
    assert browser.search("reflection") == [f"t:{pad_task.task_id}"]
    detail = browser.select(f"t:{pad_task.task_id}")
    assert detail["id"] == f"t:{pad_task.task_id}" and detail["title"] == "reflection_pad2d_0 (NormalForward)"
    sections = {sec["title"]: dict(map(tuple, sec["rows"])) for sec in detail["sections"]}
    assert sections["op"]["op_type"] == "reflection_pad2d" and sections["attrs"] == {"padding": "[1,1,1,1]"}
    assert sections["outputs"] == {"reflection_pad2d_0/y_0": "f32[2,1,5,5]"}
    assert browser.highlighted == [f"t:{pad_task.task_id}"]
    # the first ES module sends its SVG ids, which carry this output's prefix
    browser.select(f"{browser.id_prefix}plan-t:{pad_task.task_id}")
    assert browser.detail["id"] == f"t:{pad_task.task_id}"
    with pytest.raises(KeyError, match="no node 'nope' in the plan view"):
        browser.select("nope")


def test_selecting_an_input_links_its_push_job_and_shared_block(pad_job):
    browser = PlanBrowser(flow.default_session(), view="jobs")
    graph = browser.payload["graph"]
    inputs = [n["id"] for n in graph["nodes"] if n["label"] == "Input_0"]
    assert len(inputs) == 2  # the user job's and the push job's
    browser.select(inputs[0])
    block = next(n["id"] for n in graph["nodes"] if n["kind"] == "memblock" and n["label"].startswith("Input_0"))
    assert set(browser.highlighted) == {*inputs, block}
    browser.show("push")
    assert "System-Push-Input_0-ForeignInput" in html.unescape(browser.svg) and browser.highlighted == []
    assert browser.selected == "" and browser.detail == {} and browser.payload["kind"] == "jobset"
    browser.search("Input_0")
    push_inputs = [n["id"] for n in browser.payload["graph"]["nodes"] if "Input_0" in n["label"]]
    browser.show("plan")  # the search text stays, so its matches are those of the new view (issue 10, finding 9)
    tasks = {f"t:{t.task_id}" for t in flow.default_session().plan.tasks if "Input_0" in t.name}
    assert browser.query == "Input_0" and set(browser.highlighted) == tasks and set(push_inputs).isdisjoint(tasks)
    with pytest.raises(ValueError, match="no view 'nope'"):
        browser.show("nope")


def test_browser_messages_and_groups(pad_job):
    browser = PlanBrowser(flow.default_session())
    pad = flow.default_session().plan.task("reflection_pad2d_0").task_id
    browser._on_msg(browser, {"type": "select", "id": "t:nope"}, [])  # a bad click is reported in the view
    assert browser.error.startswith("KeyError: \"no node 't:nope' in the plan view") and browser.selected == ""
    browser.selected = "t:gone"  # the first ES module sets the trait itself
    assert browser.error.startswith("KeyError: no node 't:gone'") and browser.detail == {}
    browser._on_msg(browser, {"type": "select", "id": f"t:{pad}"}, [])
    assert browser.selected == f"t:{pad}" and browser.detail["id"] == f"t:{pad}" and browser.error == ""
    sent = []
    browser.send = sent.append
    browser.focus(f"t:{pad}")
    assert sent == [{"type": "focus", "id": f"t:{pad}"}]
    job = browser.payload["graph"]["groups"][0]["id"]
    browser.collapse(job)
    assert browser.payload["graph"]["groups"][0]["collapsed"] is True
    browser.expand(job)
    assert browser.payload["graph"]["groups"][0]["collapsed"] is False
    with pytest.raises(KeyError, match="no group 'g:nope' in the plan view"):
        browser.expand("g:nope")


def test_a_browser_in_ipython_names_cells_not_temp_files():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    try:
        ip.run_cell(CELL_FN)
        ip.run_cell("pad_Job(np.zeros((2, 1, 3, 3), np.float32))")
        browser = PlanBrowser(flow.default_session(), "jobs")
        text = browser.describe("reflection_pad2d_0")
        assert re.search(r"source: cell \[\d+\], line 3", text), text
        # The conf row (the op as `print(job)` shows it) names the cell too, not IPython's temp file.
        assert not re.search(r"\d+\.py:\d+", text), text
        assert re.search(r"conf: .*# cell \[\d+\], line 3", text), text
    finally:
        InteractiveShell.clear_instance()


CELL_FN = """import numpy as np, flowlab as flow, flowlab.typing as tp
def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
    return flow.reflection_pad2d(x, padding=1)
pad_Job = flow.global_function()(pad_Job)
"""


def test_browser_has_a_static_svg_fallback(pad_job):
    bundle = PlanBrowser(flow.default_session())._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data and data["image/svg+xml"].startswith("<?xml")
    assert data["application/vnd.flowlab.plan+json"]["kind"] == "plan"


def test_two_browsers_never_share_ids(pad_job):
    first, second = PlanBrowser(flow.default_session()), PlanBrowser(flow.default_session())
    assert first.id_prefix != second.id_prefix
    ids = [set(re.findall(r'\bid="([^"]+)"', b.svg)) for b in (first, second)]
    assert ids[0] and not ids[0] & ids[1]


def test_flowjob_result_opens_the_widgets(pad_job):
    from flowlab.notebook.result import FlowjobResult

    result = FlowjobResult(flow.default_session())
    assert isinstance(result.browser(), PlanBrowser)
    with pytest.raises(ValueError, match="%%flowjob --debug"):
        result.debugger_widget()


def test_the_browser_debug_button_opens_the_debugger(pad_job):
    from IPython.core.interactiveshell import InteractiveShell

    from tests.helpers.magic_cells import CELL

    ip = InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "flowlab")
        result = ip.run_cell_magic("flowjob", "", CELL)
        box = result.interactive_view()
        browser, out = box.children
        assert browser.can_debug
        # the cell's call was captured: its Schedule is offered beside the Plan, built when first shown
        assert browser.views[-1] == "schedule" and browser.view != "schedule"
        browser._on_msg(browser, {"type": "show", "view": "schedule"}, [])  # what the view switch sends
        assert browser.error == "" and browser.payload["schedule"]["schedules"]
        browser._on_msg(browser, {"type": "debug"}, [])  # what the button sends
        assert browser.debug_open and len(out.outputs) == 1
        browser.debug()  # a second press closes it
        assert not browser.debug_open and out.outputs == ()
        widget = browser.debug()  # a third opens a fresh one
        assert isinstance(widget, DebuggerWidget) and len(out.outputs) == 1 and browser.debug_open
        view = out.outputs[0]["data"]["application/vnd.jupyter.widget-view+json"]
        assert view["model_id"] == widget.model_id  # the new debugger is the one shown
        widget.continue_()
        np.testing.assert_array_equal(widget.dbg.result, ip.user_ns["y"])
    finally:
        InteractiveShell.clear_instance()
    with pytest.raises(RuntimeError, match="no job call to debug"):
        PlanBrowser(flow.default_session()).debug()
