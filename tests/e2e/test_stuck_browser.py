"""A hang drawn on the Plan (issue 27 §4), in chromium on the built view: the purpose-built hanging Plans of
tests/runtime/test_hang.py (a register cycle; a consumer that never returns a register). The cycle's boxes are on
screen, inside the canvas, in the legend's "in the cycle" colour (pixels); the wait-for edges of the cycle are
drawn; a cycle actor's detail pane shows the WaitGraph's own text for it; the panel shows the deadlock line.
Light and dark; screenshots in build/e2e-shots/stuck_*.png."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flowlab as flow
from tests.e2e.harness import MOUNT, harness_page, missing, png_pixels
from tests.helpers.deep_mlp import build_deep_mlp
from tests.helpers.hang_plans import X, call, cycle_of, cycle_plan, leak

if missing():
    pytest.skip(missing(), allow_module_level=True)

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"
CYCLE_FILL = (0xF6, 0xA8, 0xA8)  # extension/src/stuck.ts STUCK_COLORS.cycle.fill


def _theme(page, theme: str) -> None:
    page.evaluate("t => { document.body.dataset.jpThemeLight = t; document.body.style.background = "
                  "t === 'false' ? '#111' : '#fff'; }", "false" if theme == "dark" else "true")


def _colour(page, locator) -> tuple[int, ...]:
    rows = png_pixels(page.screenshot(clip=locator.bounding_box()))
    counts: dict[tuple[int, ...], int] = {}
    for row in rows:
        for p in row:
            counts[p[:3]] = counts.get(p[:3], 0) + 1
    return max(counts, key=counts.get)


def _inside(box: dict, area: dict) -> bool:
    return (box["x"] >= area["x"] and box["y"] >= area["y"] and box["x"] + box["width"] <= area["x"] + area["width"]
            and box["y"] + box["height"] <= area["y"] + area["height"])


def _cycle_payload():
    from flowlab.runtime import Runtime

    plan, _ctrl = cycle_plan()
    rt = Runtime(plan)
    with pytest.raises(flow.debug.HangError) as err:
        rt.run_call(call([]))
    view = flow.debug.show_stuck(err.value, plan=plan)
    flow.clear_default_session()
    return json.loads(json.dumps(view.payload)), err.value.graph


def _leak_payload():
    with flow.flags(replay=False):  # the replay layer performs calls itself, past the patched actor
        flow.clear_default_session()
        fn = _pad_job()
        fn(X)
        session = flow.default_session()
        leak(session.runtime, "Return_0", "pad_Job")
        fn(X)
        with pytest.raises(flow.debug.HangError) as err:
            fn(X)
        view = flow.debug.show_stuck(err.value)
    flow.clear_default_session()
    return json.loads(json.dumps(view.payload)), err.value.graph


def _pad_job():
    import flowlab.typing as tp

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return pad_Job


def _judge(page, payload: dict, graph) -> None:
    st = payload["stuck"]
    canvas = page.locator(".fl-canvas").bounding_box()
    swatch = _colour(page, page.locator('.fl-stuck-swatch[data-kind="cycle"]'))
    assert all(abs(a - b) <= 6 for a, b in zip(swatch, CYCLE_FILL)), swatch
    by_id = {f"t:{b.actor_id}": b for b in graph.blocked}
    for node in st["cycle"]:
        box = page.locator(f'.fl-node[data-id="{node}"]')
        assert box.count() == 1, f"{node} is not drawn as its own box"
        where = box.bounding_box()
        assert where is not None and _inside(where, canvas), (node, where, canvas)
        got = _colour(page, box.locator(".fl-shape"))
        assert all(abs(a - b) <= 6 for a, b in zip(got, swatch)), f"{node}: fill {got}, legend {swatch}"
        assert by_id[node].actor in box.locator(".fl-label").text_content()
    assert page.locator(".fl-wait-edge.cycle").count() == len(st["cycle"])
    head = page.locator(".fl-stuck-head").text_content()
    assert head.startswith("deadlock: a cycle of waits") and all(n in head for n in graph.cycle)
    # the detail pane of a cycle actor: the WaitGraph's text for it, and links to what it waits for
    first = st["cycle"][0]
    page.locator(f'.fl-node[data-id="{first}"]').click()
    page.wait_for_selector(".fl-detail .fl-stuck-reason")
    assert page.locator(".fl-detail .fl-stuck-reason").text_content() == str(by_id[first])
    waits = page.locator(".fl-detail .fl-stuck-waits a").all_text_contents()
    assert set(waits) == set(by_id[first].waits_for)


def _deep_cycle_payload():
    """The 30-layer MLP train job's Plan (754 tasks) with a register cycle between its loss and Return_0, hung by
    a real call on a Runtime of the edited Plan."""
    import numpy as np

    from flowlab.runtime import JobInstance, Runtime

    plan, _ctrl = cycle_of(build_deep_mlp().plan, "deep_train", "loss")
    rt = Runtime(plan)
    x, y = np.zeros((50, 64), np.float32), np.zeros(50, np.int32)
    instances = [JobInstance("System-Push-Input_0", push_array=x), JobInstance("System-Push-Input_1", push_array=y),
                 JobInstance("deep_train"), JobInstance("System-Pull-Return_0", on_pull=lambda a: None)]
    with pytest.raises(flow.debug.HangError) as err:
        rt.run_call(instances)
    view = flow.debug.show_stuck(err.value, plan=plan)
    flow.clear_default_session()
    return json.loads(json.dumps(view.payload)), err.value.graph


def test_a_register_cycle_in_the_30_layer_train_job_is_drawn_on_its_plan():
    payload, graph = _deep_cycle_payload()
    assert set(graph.cycle) == {"loss", "Return_0"}
    with harness_page(1300, 1000) as page:
        page.evaluate(MOUNT, payload)
        page.wait_for_selector(".fl-graph[data-stuck='ready']")
        page.wait_for_selector(".fl-canvas[data-layout='idle']")
        _judge(page, payload, graph)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "stuck_cycle_30_layers.png"), full_page=True)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_register_cycle_is_drawn_on_the_plan(theme):
    payload, graph = _cycle_payload()
    assert set(graph.cycle) == {"reflection_pad2d_0", "Return_0"}
    with harness_page(1300, 1000) as page:
        _theme(page, theme)
        page.evaluate(MOUNT, payload)
        page.wait_for_selector(".fl-graph[data-stuck='ready']")
        page.wait_for_selector(".fl-canvas[data-layout='idle']")
        _judge(page, payload, graph)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"stuck_cycle_{theme}.png"), full_page=True)


def test_a_consumer_that_never_returns_a_register_is_drawn_on_the_plan():
    payload, graph = _leak_payload()
    assert "was taken and never returned" in payload["stuck"]["text"]
    with harness_page(1300, 1000) as page:
        page.evaluate(MOUNT, payload)
        page.wait_for_selector(".fl-graph[data-stuck='ready']")
        page.wait_for_selector(".fl-canvas[data-layout='idle']")
        _judge(page, payload, graph)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "stuck_leak_light.png"), full_page=True)


DEBUGGER_MOUNT = """async ([payload, update]) => {
  const out = document.getElementById('out'); out.replaceChildren();
  const el = document.createElement('div'); out.append(el);
  const mod = await import('/flowlab/notebook/static/flowlab_widget.js');
  const model = new window.flowlab.FakeModel({ payload, selected: '', query: '', update });
  window.model = model;
  mod.default.render({ model, el });
}"""


def test_the_debugger_widget_draws_the_hang_when_a_call_hangs(monkeypatch):
    from flowlab.debug import Debugger
    from flowlab.notebook.debugger_widget import DebuggerWidget
    from flowlab.runtime import Runtime

    plan, _ctrl = cycle_plan()
    session = flow.default_session()
    monkeypatch.setattr(session, "debug_runtime", lambda: Runtime(plan))  # the edited Plan: same task ids
    dbg = Debugger(session, session.function_descs["pad_Job"], (X,), {})
    widget = DebuggerWidget(dbg)
    widget.continue_()  # hangs on the cycle: the widget draws it
    payload = json.loads(json.dumps(widget.payload))
    update = json.loads(json.dumps(widget._stream.whole(widget.state)))
    graph = dbg.why_stuck()
    flow.clear_default_session()
    with harness_page(1300, 1300) as page:
        page.evaluate(DEBUGGER_MOUNT, [payload, update])
        page.wait_for_selector(".fl-debugger .fl-graph[data-stuck='ready']")
        page.wait_for_selector(".fl-debugger .fl-canvas[data-layout='idle']")
        _judge(page, payload, graph)
        assert "stuck: no actor can act" in page.locator(".fl-debugger").text_content()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "stuck_debugger_light.png"), full_page=True)
