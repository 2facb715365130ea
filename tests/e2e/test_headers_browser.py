"""Group headers in the 10,000-task Plan (benchmarks/browser_views.py's fixture) as a person sees them: every header's
text whole and inside its group's box, at each depth a user opens (a job, a layer of it, the lanes)."""

from __future__ import annotations

import pytest

from tests.e2e.harness import harness_page, missing
from tests.helpers.e2e_views import inside, mount, shot

if missing():
    pytest.skip(missing(), allow_module_level=True)

# What each header must read, from the fixture's definition (extension/src/fixtures.ts bigPlan: 10 jobs of 1,000
# tasks, 25 layers of 40, two lanes), not from what the view drew.
EXPECTED = {"g:job:0": "− job_0 (user) (1000)", "g:job:0/layer3": "− layer3 (40)",
            "lane:0": "− machine 0 / thread 0 (5000)", "lane:1": "− machine 0 / thread 1 (5000)"}

HEADERS = """() => [...document.querySelectorAll('.fl-cluster')].map((g) => {
  const t = g.querySelector('.fl-cluster-label'), box = g.querySelector('.fl-cluster-box').getBoundingClientRect();
  const tb = t.getBoundingClientRect();
  return {id: g.dataset.group, text: t.textContent, title: g.querySelector('title').textContent,
          box: {x: box.x, y: box.y, width: box.width, height: box.height},
          text_box: {x: tb.x, y: tb.y, width: tb.width, height: tb.height}};
})"""


@pytest.fixture(scope="module")
def page():
    with harness_page() as pg:
        yield pg


def check_headers(page, want: set[str]) -> list[dict]:
    heads = page.evaluate(HEADERS)
    assert {h["id"] for h in heads} >= want, [h["id"] for h in heads]
    for h in heads:
        if h["id"] in EXPECTED:
            assert h["text"] == EXPECTED[h["id"]], h
        assert "…" not in h["text"], f"header of {h['id']} is cut: {h['text']!r}"
        assert inside(h["text_box"], h["box"]), f"header {h['text']!r} runs out of its group: {h}"
    return heads


def test_every_header_is_whole_and_inside_its_group(page):
    mount(page, "plan_10k")
    page.locator('[data-id="g:job:0"]').click()
    page.wait_for_selector('[data-group="g:job:0"]')
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')
    check_headers(page, {"g:job:0"})
    shot(page, "plan_10k_job_header")
    page.locator('[data-id="g:job:0/layer3"]').click()
    page.wait_for_selector('[data-group="g:job:0/layer3"]')
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')
    check_headers(page, {"g:job:0", "g:job:0/layer3"})
    shot(page, "plan_10k_layer_header")
    page.get_by_role("button", name="by lane").click()  # the lanes open as boxes; open both
    for lane in ("lane:0", "lane:1"):
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        page.wait_for_selector(f'[data-id="{lane}"], [data-group="{lane}"]')
        if page.locator(f'[data-group="{lane}"]').count() == 0:
            page.locator(f'[data-id="{lane}"]').click()
            page.wait_for_selector(f'[data-group="{lane}"]')
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')
    check_headers(page, {"lane:0", "lane:1"})
    shot(page, "plan_10k_lane_headers")


def test_a_label_longer_than_any_box_ends_in_an_ellipsis_with_the_whole_name_in_the_tooltip(page):
    long = "job_with_a_name_that_no_reasonable_box_can_hold_" * 4
    payload = page.evaluate("""(name) => {
      const p = window.flowlab.fx.bigPlan(400, 2, 4);
      p.graph.groups[0].label = name;
      return p;
    }""", long)
    mount(page, payload)
    page.locator('[data-id="g:job:0"]').click()
    page.wait_for_selector('[data-group="g:job:0"]')
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')
    head = next(h for h in page.evaluate(HEADERS) if h["id"] == "g:job:0")
    assert head["text"].endswith("… (200)") and head["text"].startswith("− job_with_a_name"), head["text"]
    assert inside(head["text_box"], head["box"]), head
    assert long in head["title"]
    shot(page, "long_header")
