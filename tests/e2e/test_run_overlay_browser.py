"""Overlays in the run view (issue 27 §3, "the same in the widget"): show_run(dbg, overlay=...) colours the recorded
run's Plan boxes as the Plan view does, in chromium on the built view: a box's fill is its bin's legend swatch
(pixels), the legend names the metric, and the act slider still moves the acting box. Screenshot:
build/e2e-shots/run_overlay_light.png."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.e2e.harness import MOUNT, harness_page, missing, png_pixels

if missing():
    pytest.skip(missing(), allow_module_level=True)

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"


def _colour(page, locator) -> tuple[int, ...]:
    rows = png_pixels(page.screenshot(clip=locator.bounding_box()))
    counts: dict[tuple[int, ...], int] = {}
    for row in rows:
        for p in row:
            counts[p[:3]] = counts.get(p[:3], 0) + 1
    return max(counts, key=counts.get)


def test_a_run_view_draws_an_overlay_on_its_boxes():
    from flowlab.debug.overlay import Overlay
    from flowlab.notebook import show_run

    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    x = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
    pad_Job(x)
    dbg = flow.debug(pad_Job, x)
    dbg.continue_()
    ov = flow.debug.overlay(dbg, metric="bytes")
    values = sorted(set(ov.values.values()))
    ov = Overlay(ov.metric, ov.unit, ov.values, ov.view, (values[len(values) // 2],), (), ov.labels, ov.source)
    payload = json.loads(json.dumps(show_run(dbg, overlay=ov).payload))
    assert payload["kind"] == "run" and payload["overlay"]["metric"] == ov.metric
    flow.clear_default_session()
    with harness_page(1300, 1100) as page:
        page.evaluate(MOUNT, payload)
        page.wait_for_selector(".fl-run .fl-node[data-overlay]")
        page.wait_for_selector(".fl-canvas[data-layout='idle']")
        assert "bytes" in page.locator(".fl-run .fl-ov-legend").text_content()
        canvas = page.locator(".fl-canvas").bounding_box()
        judged = 0
        for box in page.locator(".fl-run .fl-node[data-overlay]").all():
            node = box.get_attribute("data-id")
            where = box.bounding_box()
            if node not in ov.values or where is None or where["y"] < canvas["y"] or \
                    where["y"] + where["height"] > canvas["y"] + canvas["height"]:
                continue
            if "act" in (box.get_attribute("class") or "") or "sel" in (box.get_attribute("class") or ""):
                continue  # the acting box's highlight is drawn over its fill
            swatch = _colour(page, page.locator(f'.fl-ov-swatch[data-bin="{ov.bin(ov.values[node])}"]'))
            got = _colour(page, box.locator(".fl-shape"))
            assert all(abs(a - b) <= 6 for a, b in zip(got, swatch)), (node, got, swatch)
            judged += 1
        assert judged >= 2
        before = page.locator(".fl-act-label").text_content()
        page.locator(".fl-run button[title='next act']").click()
        assert page.locator(".fl-act-label").text_content() != before
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "run_overlay_light.png"), full_page=True)
