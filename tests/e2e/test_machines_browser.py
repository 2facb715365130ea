"""A 2-machine Plan (the one a Ray cluster runs: issue 24's last check) read at a glance: each task box says its
machine and device, a CopyCommNet task says where it sends, and the lanes name the machine. Compiled in process
(flow.env.machine with two hosts; no Ray needed: the Plan is the same). Screenshot: build/e2e-shots/machines_*.png."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flowlab as flow
from tests.e2e.harness import MOUNT, harness_page, missing
from tests.ray.programs import data, mlp_train

if missing():
    pytest.skip(missing(), allow_module_level=True)

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"


def _two_machine_plan() -> dict:
    from flowlab.viz.payload import plan_payload

    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    job = mlp_train(["0:0", "1:0"])
    job(*data(0))
    session = flow.default_session()
    return json.loads(json.dumps(plan_payload(session.plan, session.job_set)))


def _focus(page, text: str) -> None:
    page.fill(".fl-search", text)
    page.keyboard.press("Enter")  # opens the groups that hold the match and centres it
    page.wait_for_timeout(400)
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')


def test_a_two_machine_plan_names_machines_on_boxes_and_lanes():
    payload = _two_machine_plan()
    machines = {n["device"] for n in payload["graph"]["nodes"] if n.get("device")}
    assert machines == {"machine 0 cpu:0", "machine 1 cpu:0"}  # the payload itself, before the screen
    with harness_page(1500, 1100) as page:
        page.evaluate(MOUNT, payload)
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        _focus(page, "dense1-matmul")
        subs = page.locator(".fl-node", has=page.locator(".fl-label", has_text="dense1-matmul")).locator(".fl-type")
        assert sorted(subs.all_text_contents()) == ["NormalForward · machine 0 cpu:0",
                                                    "NormalForward · machine 1 cpu:0"]
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "machines_plan.png"))
        _focus(page, "copy_comm_net_2")
        comm = page.locator(".fl-node", has=page.locator(".fl-label", has_text="copy_comm_net_2"))
        assert "machine 1 cpu:0" in comm.locator(".fl-type").first.text_content()
        comm.first.click()
        detail = page.locator(".fl-detail").inner_text()
        assert "copy_comm_net_2" in detail and "machine 1" in detail, detail
        assert "blob\t?" not in detail and "blob ?" not in detail, detail  # names what it sends
        page.click(".fl-lanes-toggle")  # group by lane: each machine's threads, named
        page.wait_for_selector('.fl-canvas[data-layout="idle"]')
        drawn = page.locator(".fl-viewport").text_content()  # lane boxes (groups), open or collapsed
        assert "machine 0 / cpu compute 0" in drawn and "machine 1 / cpu compute 0" in drawn, drawn[:400]
        page.screenshot(path=str(SHOTS / "machines_lanes.png"))
        assert not page.locator("text=/error|cannot be shown/i").count()
