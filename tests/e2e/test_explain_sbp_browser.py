"""Explain SBP from an op in the Plan view (issue 24): a task's detail pane shows its op's candidates with their order
value and cost in bytes, what the order value is, the chosen one, and the boxing tasks the choice caused as links;
clicking one selects that task (its box marked, its own detail shown). Screenshots: build/e2e-shots/sbp_*.png."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.harness import MOUNT, harness_page, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

from tests.helpers.dp_train import _dp_train

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_an_ops_detail_explains_its_sbp_and_its_boxing_tasks_link(theme):
    from flowlab.viz.payload import plan_payload

    session = _dp_train()
    payload = json.loads(json.dumps(plan_payload(session.plan, session.job_set)))
    with harness_page(1500, 1000) as page:
        page.evaluate("t => { document.body.dataset.jpThemeLight = t; document.body.style.background = "
                      "t === 'false' ? '#111' : '#fff'; }", "false" if theme == "dark" else "true")
        page.evaluate(MOUNT, payload)
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.fill(".fl-search", "fc1-weight_optimizer")
        page.keyboard.press("Enter")
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.locator(".fl-node.current").click()
        detail = page.locator(".fl-detail")
        text = detail.inner_text()
        assert "sbp" in text and "candidate 0" in text and "(chosen)" in text and "how chosen" in text, text
        assert "132 B" in text and "INT32_MAX (an input leaving B)" in text and "2147483647" not in text, text
        links = detail.locator("tr", has=page.locator("th", has_text="boxing tasks")).locator("a.fl-link")
        assert links.count() == 6, detail.inner_text()
        names = links.all_text_contents()
        assert all(n.startswith("System-Boxing-") for n in names), names
        SHOTS.mkdir(parents=True, exist_ok=True)
        detail.locator("tr", has=page.locator("th", has_text="boxing tasks")).scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"sbp_detail_{theme}.png"))
        t0 = time.perf_counter()
        links.nth(0).click()
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.locator(".fl-detail-title", has_text=names[0]).wait_for()
        ms = (time.perf_counter() - t0) * 1000
        assert page.locator(".fl-node.sel .fl-label").text_content() == names[0]
        assert "converts" in page.locator(".fl-detail").inner_text()  # the boxing task's own pane: what it converts
        page.screenshot(path=str(SHOTS / f"sbp_boxing_selected_{theme}.png"))
        assert ms <= 1000, f"click on a boxing link -> that task selected took {ms:.0f} ms"
