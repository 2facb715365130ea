"""Lanes say what runs on them (issue 24: "lanes say device and stream/thread, not 'thread' alone"): a 2-device
Plan's legend and its "by lane" groups read "cpu compute 0", "cpu tick", ... (flowlab/viz/payload_devices.py's
lane_names), and the word "thread" is gone from both. Judged by the visible text in chromium, light and dark;
screenshots: build/e2e-shots/lanes_*.png."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.harness import MOUNT, harness_page, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

from tests.helpers.dp_train import _dp_train

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_two_device_plans_lanes_name_what_runs_on_them(theme):
    from flowlab.viz.payload import plan_payload

    session = _dp_train()
    payload = json.loads(json.dumps(plan_payload(session.plan, session.job_set)))
    lanes = payload["graph"]["lanes"]
    assert "cpu compute 0" in lanes and "cpu compute 1" in lanes and "cpu tick" in lanes, lanes
    with harness_page(1500, 1000) as page:
        page.evaluate("t => { document.body.dataset.jpThemeLight = t; document.body.style.background = "
                      "t === 'false' ? '#111' : '#fff'; }", "false" if theme == "dark" else "true")
        page.evaluate(MOUNT, payload)
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        legend = page.locator(".fl-lanes")
        text = legend.inner_text()
        assert text.startswith("cpu:") and "compute 0" in text and "compute 1" in text and "tick" in text, text
        assert "thread" not in text, text
        assert legend.locator(".fl-lane-chip").nth(0).get_attribute("title") == lanes[0]  # the full name on hover
        page.get_by_role("button", name="by lane").click()
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.wait_for_timeout(200)
        heads = " | ".join(page.locator(".fl-cluster-label, .fl-node.fl-group-box .fl-label").all_text_contents())
        assert "cpu compute 0" in heads and "cpu compute 1" in heads, heads
        assert "thread" not in heads, heads
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"lanes_dp_{theme}.png"))
