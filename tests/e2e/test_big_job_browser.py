"""An expanded 30-layer train job reads (issue 24): its 30 layer boxes were one row, with ~130 dashed shared-memory
and control edges fanning out of one hub. Now the layers follow the data flow down, folded into columns, and the
dashed (shared-memory, control, hub) edges are drawn only around the selected box, two hops deep, with an "all
edges" toggle. Judged by boxes' positions and the edges drawn, in chromium, light and dark; screenshots:
build/e2e-shots/big_job_*.png."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.harness import MOUNT, harness_page, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

from tests.helpers.e2e_timing import _mlp_plan_text

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"
DASHED = ".fl-edge.kind-shared_mem, .fl-edge.kind-ctrl, .fl-edge.aux"
SHOWN = f"() => [...document.querySelectorAll('{DASHED}')].filter(e => e.style.display !== 'none')" \
        ".map(e => [e.dataset.source, e.dataset.target])"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_an_expanded_30_layer_job_reads_and_draws_its_dashed_edges_for_the_selection(theme):
    text, _tasks = _mlp_plan_text(30)
    from flowlab.viz.payload_pack import unpack

    payload = unpack(json.loads(text))
    with harness_page(1200, 900) as page:
        page.evaluate("t => { document.body.dataset.jpThemeLight = t; document.body.style.background = "
                      "t === 'false' ? '#111' : '#fff'; }", "false" if theme == "dark" else "true")
        page.evaluate(MOUNT, payload)
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.locator(".fl-node", has_text="mlp_train (user)").click()
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.wait_for_timeout(200)
        layers = page.evaluate("() => [...document.querySelectorAll('.fl-node.fl-group-box')]"
                               ".filter(g => /^layer\\d+$/.test(g.querySelector('.fl-label').textContent))"
                               ".map(g => { const r = g.getBoundingClientRect(); return [r.x, r.y]; })")
        assert len(layers) == 30, layers
        rows = Counter(round(y) for _x, y in layers)
        columns = Counter(round(x) for x, _y in layers)
        assert max(rows.values()) <= 3 and 2 <= len(columns) <= 4, (rows, columns)  # folded columns, not one row
        user = page.locator(".fl-cluster", has=page.locator(".fl-cluster-label", has_text="mlp_train")).locator(
            ".fl-cluster-box").bounding_box()
        assert 0.33 <= user["width"] / user["height"] <= 3, user  # a block a fit can show, not a strip
        assert page.evaluate(SHOWN) == []  # nothing selected: no dashed edge
        total = page.evaluate(f"() => document.querySelectorAll('{DASHED}').length")
        assert total > 100, total
        toggle = page.get_by_role("button", name="all edges")
        assert toggle.is_visible()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"big_job_expanded_{theme}.png"))
        page.fill(".fl-search", "layer5-weight")
        page.keyboard.press("Enter")
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.locator(".fl-node.current").first.click()
        sel = page.locator(".fl-node.sel").get_attribute("data-id")
        shown = page.evaluate(SHOWN)
        assert 0 < len(shown) <= 12 and any(sel in pair for pair in shown), (sel, shown)
        page.screenshot(path=str(SHOTS / f"big_job_selected_{theme}.png"))
        toggle.click()
        assert len(page.evaluate(SHOWN)) == page.evaluate(f"() => document.querySelectorAll('{DASHED}').length")
        assert page.get_by_role("button", name="fewer edges").is_visible()
