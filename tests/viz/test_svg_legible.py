"""The static ``image/svg+xml`` fallback of a big payload (issue 10 finding 20) is the grouped overview, bounded and
legible where a notebook shows it: at most SVG_BUDGET boxes, no text under 10 pt, and no wider than an output area
(a wider picture is scaled down by the page, and its 10 pt text with it), with the Plan's device/thread lanes
summarised in the title; on the 30-layer MLP and a synthetic 10,000-task Plan, each in seconds."""

from __future__ import annotations

import html
import re
import time
from collections import Counter

import pytest

from flowlab.viz.payload import jobset_payload, plan_payload
from flowlab.viz.payload_svg import MAX_WIDTH_PT, SVG_BUDGET, payload_svg
from tests.helpers.synthetic_plan import synthetic_plan


def measure(svg: str) -> tuple[float, float, int, list[float]]:
    width, height = (float(v) for v in re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
    boxes = len(re.findall(r'<g id="[^"]*" class="node', svg))
    fonts = [float(f) for f in re.findall(r'font-size="([\d.]+)"', svg)]
    return width, height, boxes, fonts


def check(payload: dict, seconds: float = 20.0) -> tuple[str, float]:
    start = time.perf_counter()
    svg = payload_svg(payload)
    elapsed = time.perf_counter() - start
    width, _height, boxes, fonts = measure(svg)
    assert 0 < boxes <= SVG_BUDGET
    assert fonts and min(fonts) >= 10.0  # at the natural size, which is the size shown (see the width bound)
    assert width <= MAX_WIDTH_PT, f"{width} pt wide: a notebook scales it down to its output area"
    assert elapsed < seconds  # a few renders of a bounded picture; generous for a loaded 2-core machine
    return svg, elapsed


@pytest.mark.parametrize("kind", ["jobset", "plan"])
def test_the_30_layer_mlp_overview_is_bounded_and_legible(deep_mlp_session, kind):
    s = deep_mlp_session
    p = jobset_payload(s.job_set, s.passes) if kind == "jobset" else plan_payload(s.plan, s.job_set, passes=s.passes)
    svg, _ = check(p)
    assert "deep_train (user)" in svg  # the user's job is in the picture, with the count of what it holds
    if kind == "plan" and p["graph"]["lanes"]:
        assert f"{len(p['graph']['lanes'])} lanes" in svg


def test_a_10000_task_plan_overview_is_bounded_legible_and_summarises_lanes():
    p = plan_payload(synthetic_plan(10_000))
    svg = html.unescape(check(p)[0])  # Graphviz writes - as &#45;
    lanes = Counter(n["lane"] for n in p["graph"]["nodes"])
    assert len(lanes) > 1 and f"{len(lanes)} lanes" in svg
    busiest, count = lanes.most_common(1)[0]
    # 32 lanes: summarised per machine (lanes, tasks, tasks per lane) with the busiest one named
    low, high = min(lanes.values()), max(lanes.values())
    assert f"machine 0: {len(lanes)} lanes, {sum(lanes.values()):,} tasks ({low:,}-{high:,} per lane)" in svg
    assert f"busiest {busiest}: {count:,} tasks" in svg
    assert all(f"job{j} (user)" in svg for j in range(8))  # every job still shown
