"""The widgets' Python side: every browser action is a method, driven here without a browser."""

from __future__ import annotations

import html

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
    assert browser.views == ["user", "push", "pull", "main", "plan"]
    assert "<svg" in browser.svg and "System-Main-ReentrantLock_0" in html.unescape(browser.svg)
    plan = flow.default_session().plan
    pad_task = plan.task("reflection_pad2d_0")
    assert browser.search("reflection") == [f"task/{pad_task.task_id}"]
    detail = browser.select(f"task/{pad_task.task_id}")
    assert detail["op_type"] == "reflection_pad2d" and detail["job"] == "pad_Job"
    assert detail["blobs"] == {"reflection_pad2d_0/y_0": "f32[2,1,5,5]"}
    assert detail["attrs"] == {"padding": "(1, 1, 1, 1)"} and detail["created_by"] == "user"
    assert detail["registers"][0]["mem_block"].startswith("block ")
    assert "op/pad_Job/reflection_pad2d_0" in browser.highlighted


def test_selecting_an_input_links_its_push_job_and_shared_block(pad_job):
    browser = PlanBrowser(flow.default_session(), view="user")
    assert "op/pad_Job/Input_0" in browser.svg or "op/pad_Job/Input_0" in [i for i, _ in browser._nodes()]
    detail = browser.select("op/pad_Job/Input_0")
    plan = flow.default_session().plan
    input_tasks = {f"task/{t.task_id}" for t in plan.tasks if t.name == "Input_0"}
    assert len(input_tasks) == 2 and input_tasks <= set(browser.highlighted)  # the user and the push job's
    assert "op/System-Push-Input_0/Input_0" in browser.highlighted
    blocks = {r["mem_block"] for r in detail["registers"]}
    assert any("jobs=[0,1]" in b for b in blocks)  # the block shared with the push job
    browser.show("push")
    assert "System-Push-Input_0-ForeignInput" in html.unescape(browser.svg) and browser.highlighted == []
    with pytest.raises(ValueError, match="no view 'nope'"):
        browser.show("nope")


def test_browser_has_a_static_svg_fallback(pad_job):
    bundle = PlanBrowser(flow.default_session())._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data and data["image/svg+xml"].startswith("<?xml")


def test_debugger_widget_buttons(pad_job):
    widget = DebuggerWidget(flow.debug(pad_job, X))
    first = next(r for r in widget.rows if r["next"])
    assert first["name"] == "System-Main/System-Main-WaitAndSendIds_0"
    widget._on_msg(widget, {"cmd": "run_to", "target": "pad_Job/reflection_pad2d_0"}, [])
    assert widget.status.startswith("reached pad_Job/reflection_pad2d_0")
    plan = flow.default_session().plan
    assert widget.next_id == f"task/{plan.task('reflection_pad2d_0').task_id}"
    widget._on_msg(widget, {"cmd": "step"}, [])
    widget._on_msg(widget, {"cmd": "inspect", "name": "reflection_pad2d_0/y_0"}, [])
    assert widget.blob["shape"] == [2, 1, 5, 5] and widget.blob["min"] == 0.0 and widget.blob["max"] == 17.0
    assert sum(widget.blob["histogram"]) == 50
    pull = next(r for r in widget.rows if r["name"].endswith("ForeignOutput"))
    assert pull["state"] == "blocked" and "waiting for register" in pull["reason"]
    widget._on_msg(widget, {"cmd": "continue"}, [])
    assert widget.status.startswith("finished") and widget.next_id == ""
    widget._on_msg(widget, {"cmd": "step"}, [])  # a finished run says so in the widget, not as a crash
    assert widget.status.startswith("error: RunFinished: the run is finished")
    widget._on_msg(widget, {"cmd": "run_to", "target": "nope"}, [])
    assert "no op 'nope'" in widget.status
    widget._on_msg(widget, {"cmd": "restart"}, [])
    assert widget.status == "restarted"


def test_flowjob_result_opens_the_widgets(pad_job):
    from flowlab.notebook.result import FlowjobResult

    result = FlowjobResult(flow.default_session())
    assert isinstance(result.browser(), PlanBrowser)
    with pytest.raises(ValueError, match="%%flowjob --debug"):
        result.debugger_widget()


def test_debugger_widget_breakpoints_injection_and_end_of_job(pad_job):
    widget = DebuggerWidget(flow.debug(pad_job, X))
    widget._on_msg(widget, {"cmd": "break_nan"}, [])
    assert widget.status == "set breakpoint 1 [nan]: after an act writes a NaN into any produced blob"
    widget._on_msg(widget, {"cmd": "run_to", "target": "pad_Job/reflection_pad2d_0"}, [])
    widget._on_msg(widget, {"cmd": "inject", "name": "pad_Job/Input_0/out", "value": "nan"}, [])
    assert widget.status.startswith("injected nan") and widget.blob["nan"] == 18
    widget._on_msg(widget, {"cmd": "continue"}, [])
    assert "stopped by breakpoint 1" in widget.status
    widget._on_msg(widget, {"cmd": "end_of_job"}, [])  # the NaN reaches Return_0 too: the breakpoint fires again
    assert "stopped by breakpoint 1" in widget.status and widget.next_id
    widget._on_msg(widget, {"cmd": "clear"}, [])
    widget._on_msg(widget, {"cmd": "end_of_job"}, [])
    assert widget.status.startswith("job finished")


def test_collapse_and_lazy_expand(pad_job):
    browser = PlanBrowser(flow.default_session())
    browser.collapse("System-Main")
    svg = html.unescape(browser.svg)
    assert "System-Main-ReentrantLock_0" not in svg and "tasks: click to expand" in svg
    assert 'id="job/System-Main"' in svg
    assert browser.search("System-Main") == ["job/System-Main"]  # the collapsed job is one searchable node
    browser.select("job/System-Main")  # clicking a collapsed job expands it
    assert browser.collapsed == [] and "System-Main-ReentrantLock_0" in html.unescape(browser.svg)
    browser.collapse()
    assert sorted(browser.collapsed) == sorted(flow.default_session().plan.job_names)
    with pytest.raises(KeyError, match="no job 'nope'"):
        browser.collapse("nope")


def test_large_plans_open_collapsed():
    from flowlab.notebook import widgets

    @flow.global_function()
    def big(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        for _ in range(10):
            x = flow.math.relu(x)
        return x

    big(np.ones(4, np.float32))
    session = flow.default_session()
    old, widgets.LARGE_PLAN = widgets.LARGE_PLAN, len(session.plan.tasks) - 1
    try:
        browser = PlanBrowser(session)
    finally:
        widgets.LARGE_PLAN = old
    assert sorted(browser.collapsed) == sorted(session.plan.job_names)
    assert html.unescape(browser.svg).count("click to expand") == len(session.plan.job_names)


def test_collapse_chains(pad_job):
    browser = PlanBrowser(flow.default_session())
    plan = flow.default_session().plan
    chain = plan.task("reflection_pad2d_0").chain_id
    browser.collapse_chains("pad_Job")
    svg = html.unescape(browser.svg)
    assert f'id="chain/{chain}"' in svg and "chain" in svg and "3 tasks" in svg  # Input_0, pad, Return_0
    assert "reflection_pad2d_0\nNormalForward" not in svg
    browser.select(f"chain/{chain}")
    assert chain not in browser.collapsed_chains and "reflection_pad2d_0" in html.unescape(browser.svg)


def test_the_browser_debug_button_opens_the_debugger(pad_job):
    from IPython.core.interactiveshell import InteractiveShell

    from tests.notebook.test_magic import CELL

    ip = InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "flowlab")
        result = ip.run_cell_magic("flowjob", "", CELL)
        box = result.interactive_view()
        browser, out = box.children
        assert browser.can_debug
        widget = browser.debug()  # what the button's message calls
        assert isinstance(widget, DebuggerWidget) and len(out.outputs) == 1
        assert any(r["registers"].startswith("r") for r in widget.rows)  # register occupancy per actor
        widget.continue_()
        np.testing.assert_array_equal(widget._dbg.result, ip.user_ns["y"])
    finally:
        InteractiveShell.clear_instance()
    with pytest.raises(RuntimeError, match="no job call to debug"):
        PlanBrowser(flow.default_session()).debug()
