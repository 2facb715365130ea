"""The Schedule view (issue 26: a call's Schedule beside the Plan), in chromium on the built view: the execution
policy's text above it; a one-device MLP's fused segment drawn as one box holding exactly its steps; a two-device
data-parallel job's two lanes as two rows named by the Plan's lane names, each holding its lane's steps; a click on a
step selects its task in the Plan view (inside the canvas, the detail pane titled by it) within a measured bound.
References: the Schedule IR itself (session.schedule_of) and str(session.execution). Light and dark; screenshots in
build/e2e-shots/schedule_*.png."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flowlab as flow
from tests.e2e.harness import MOUNT, harness_page, missing
from tests.helpers.schedule_jobs import called

if missing():
    pytest.skip(missing(), allow_module_level=True)

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"
BOUND_MS = 2000  # a step's click to its task selected in the Plan view (measured: see docs/notebook-views.md)

CLICK = """async (step) => {
  const chip = document.querySelector(`.fl-sched-step[data-step="${step}"]`);
  const t0 = performance.now();
  chip.click();
  const want = chip.dataset.node;
  const done = () => {
    const sel = document.querySelector('.fl-graph .fl-node.sel');
    return sel && sel.dataset.id === want && document.querySelector('.fl-canvas').dataset.layout === 'idle';
  };
  while (!done()) await new Promise((r) => setTimeout(r, 5));
  return performance.now() - t0;
}"""


def _payload(devices: int, times: int):
    job = called(devices, times)
    session = flow.default_session()
    payload = json.loads(json.dumps(flow.debug.show_schedule(session, job).payload))
    ir, execution = session.schedule_of(job), str(session.execution)
    flow.clear_default_session()
    return payload, ir, execution


def _theme(page, theme: str) -> None:
    page.evaluate("t => { document.body.dataset.jpThemeLight = t; document.body.style.background = "
                  "t === 'false' ? '#111' : '#fff'; }", "false" if theme == "dark" else "true")


def _inside(box: dict, area: dict) -> bool:
    return (box["x"] >= area["x"] - 1 and box["y"] >= area["y"] - 1
            and box["x"] + box["width"] <= area["x"] + area["width"] + 1
            and box["y"] + box["height"] <= area["y"] + area["height"] + 1)


def _click_selects_its_task(page, payload: dict, step: int) -> float:
    node = payload["schedule"]["schedules"][0]["steps"][step]["node"]
    ms = page.evaluate(CLICK, step)
    box = page.locator(f'.fl-node.sel[data-id="{node}"]')
    assert box.is_visible() and _inside(box.bounding_box(), page.locator(".fl-canvas").bounding_box())
    label = next(n["label"] for n in payload["graph"]["nodes"] if n["id"] == node)
    assert page.locator(".fl-detail .fl-detail-title").text_content().startswith(label)
    assert page.locator(f'.fl-sched-step.on[data-step="{step}"]').count() == 1
    return ms


def _mount(page, payload: dict, theme: str) -> None:
    _theme(page, theme)
    page.evaluate(MOUNT, payload)
    page.wait_for_selector(".fl-sched-step")
    page.wait_for_selector(".fl-canvas[data-layout='idle']")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_one_device_mlps_fused_segment_is_one_box_of_its_steps(theme):
    payload, ir, execution = _payload(devices=1, times=10)
    assert ir.segments and not ir.lanes
    with harness_page(1300, 1200) as page:
        _mount(page, payload, theme)
        policy = page.locator(".fl-sched-policy")
        assert policy.locator("summary").text_content() == execution.splitlines()[0]
        assert policy.locator("pre").text_content() == "\n".join(execution.splitlines()[1:])
        assert page.locator(".fl-sched-row").count() == 1
        for k, seg in enumerate(ir.segments):  # its boxes (split by the notifies between its steps) hold its steps
            boxes = page.locator(f'.fl-sched-seg[data-seg="{k}"]')
            assert boxes.count() >= 1 and boxes.first.is_visible()
            steps = boxes.locator(".fl-sched-step").evaluate_all("els => els.map(e => Number(e.dataset.step))")
            assert steps == list(seg)
        assert page.locator(".fl-sched-seg").count() == page.locator(".fl-sched-seg-label").count()
        outside = set(range(len(ir.steps))) - {i for seg in ir.segments for i in seg}
        shown = page.locator(".fl-sched-row > .fl-sched-chips > .fl-sched-step")  # chips in no segment box
        assert {int(s) for s in shown.evaluate_all("els => els.map(e => e.dataset.step)")} == outside
        first = ir.segments[0][min(4, len(ir.segments[0]) - 1)]
        ms = _click_selects_its_task(page, payload, first)
        assert ms < BOUND_MS, ms
        print(f"schedule step click -> task selected: {ms:.0f} ms")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"schedule_mlp_{theme}.png"), full_page=True)


def test_a_two_device_data_parallel_job_has_a_row_per_lane():
    payload, ir, _execution = _payload(devices=2, times=2)
    assert len(ir.lanes) == 2
    lanes = payload["schedule"]["schedules"][0]["lanes"]
    with harness_page(1300, 1200) as page:
        _mount(page, payload, "light")
        rows = page.locator(".fl-sched-row")
        assert rows.count() == 2
        for k, (_thread, steps) in enumerate(ir.lanes):
            row = rows.nth(k)
            assert row.locator(".fl-sched-lane").text_content() == lanes[k]["label"]
            got = row.locator(".fl-sched-step").evaluate_all("els => els.map(e => Number(e.dataset.step))")
            assert got == list(steps)
        # a step of the second lane: its task runs on that lane's Plan thread
        step = ir.lanes[1][1][len(ir.lanes[1][1]) // 2]
        assert (ir.steps[step].machine_id, ir.steps[step].thrd_id) == ir.lanes[1][0]
        ms = _click_selects_its_task(page, payload, step)
        assert ms < BOUND_MS, ms
        print(f"schedule step click -> task selected: {ms:.0f} ms")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "schedule_dp2_light.png"), full_page=True)
