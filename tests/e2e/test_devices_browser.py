"""A 2-device Plan read at a glance (issue 24): each task box says its device (twin boxes had identical labels), a
boxing task says what it converts and for whom, and edges carry the SBP beside each device's shape. Judged by the
visible text of the built view in chromium; screenshots: build/e2e-shots/devices_*.png."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import MOUNT, harness_page, missing
from tests.helpers.dp_train import _dp_train
from tests.helpers.e2e_devices import SHOTS

if missing():
    pytest.skip(missing(), allow_module_level=True)


def test_task_boxes_say_their_device_and_boxing_what_it_converts():
    from flowlab.viz.payload import plan_payload

    session = _dp_train()
    payload = json.loads(json.dumps(plan_payload(session.plan, session.job_set)))
    nodes = {n["label"]: n for n in payload["graph"]["nodes"] if n.get("note", "").startswith("fc1-weight grad")}
    add = next(n for label, n in nodes.items() if "BoxingAdd" in label)
    with harness_page(1500, 1100) as page:
        page.evaluate(MOUNT, payload)
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.fill(".fl-search", add["label"])
        page.keyboard.press("Enter")  # opens the groups that hold it and centres it
        page.wait_for_timeout(400)
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        box = page.locator(f'[data-id="{add["id"]}"]')
        assert box.locator(".fl-type").text_content() == f"{add['device']} · fc1-weight grad: P → B over cpu:0-1"
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "devices_boxing.png"))
        box.click()
        detail = page.locator(".fl-detail").inner_text()
        assert "converts" in detail and "fc1-weight grad: P → B over cpu:0-1" in detail, detail
        page.fill(".fl-search", "fc1-matmul")
        page.keyboard.press("Enter")
        page.wait_for_timeout(400)
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        subs = page.locator(".fl-node", has=page.locator(".fl-label", has_text="fc1-matmul")).locator(".fl-type")
        assert sorted(subs.all_text_contents()) == ["NormalForward · cpu:0", "NormalForward · cpu:1"]
        tips = page.locator(".fl-node", has=page.locator(".fl-label", has_text="fc1-matmul")).locator("title")
        assert all("sbp {a_0: S(0), b_0: B, out_0: S(0)}" in t for t in tips.all_text_contents())  # one hover away
        edges = page.locator(".fl-edge-label").all_text_contents()
        assert "S(0) f32[8,4]" in edges, edges
        page.screenshot(path=str(SHOTS / "devices_plan.png"))
