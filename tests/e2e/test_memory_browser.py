"""The memory view of a recorded train step as a person reads it (issue 24): rows named by their blob (the lbn), not
by register id (`r:68 @0`); blocks sorted by size or peak from a control; the total live bytes over the acts as a line
with its peak said in words; no scroll box of its own inside the notebook's scroll (the chart is as tall as its
rows). Judged in chromium on the built view, light and dark; screenshots: build/e2e-shots/memory_*.png."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.harness import MOUNT, harness_page, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"


def _train_run() -> dict:
    """A run payload of one debugged step of a 3-layer train job (its memory record has real lbns)."""
    import flowlab as flow
    import flowlab.typing as tp
    from flowlab.viz.payload import run_payload

    flow.clear_default_session()

    @flow.global_function(type="train")
    def mem_train(x: tp.Numpy.Placeholder((8, 16)), y: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        h = x
        for i in range(3):
            h = flow.layers.dense(h, 16, activation=flow.nn.relu, name=f"fc{i}")
        logits = flow.layers.dense(h, 4, name="out")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    dbg = flow.debug(mem_train, np.ones((8, 16), np.float32), np.zeros(8, np.int32))
    dbg.continue_()
    payload = run_payload(dbg.plan, flow.default_session().job_set, dbg.recording())
    flow.clear_default_session()
    return json.loads(json.dumps(payload))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_memory_rows_name_blobs_sort_by_peak_and_show_total_live_bytes(theme):
    payload = _train_run()
    lifetimes = payload["memory"]["lifetimes"]
    assert len(lifetimes) > 10 and all(lt["lbns"] for lt in lifetimes)
    with harness_page(1300, 1000) as page:
        page.evaluate("t => { document.body.dataset.jpThemeLight = t; document.body.style.background = "
                      "t === 'false' ? '#111' : '#fff'; }", "false" if theme == "dark" else "true")
        page.evaluate(MOUNT, payload)
        page.wait_for_selector(".fl-mem svg")
        labels = page.locator(".fl-mem-labels text").all_text_contents()
        assert labels and not [x for x in labels if re.fullmatch(r"r:\d+ @\d+", x)], labels[:5]
        assert any("fc1" in x for x in labels), labels
        size = page.eval_on_selector(".fl-mem-labels text", "e => parseFloat(getComputedStyle(e).fontSize)")
        assert size >= 10
        # the total line, its words, and no vertical scroll box of its own
        # the words come with the cursor's first position, a frame after the chart: wait for them as a person would
        page.wait_for_function("() => (document.querySelector('.fl-mem-total text')?.textContent || '').length > 0",
                               timeout=10_000)
        total = page.locator(".fl-mem-total text").text_content()
        peak = max(np.bincount(np.concatenate([np.arange(lt["first_act"], lt["last_act"] + 1) for lt in lifetimes]),
                               weights=np.concatenate([np.full(lt["last_act"] - lt["first_act"] + 1, lt["size"])
                                                       for lt in lifetimes])))
        assert re.search(r"total live: .* at act \d+, peak .* at act \d+", total), total
        assert page.locator("path.total").get_attribute("d").count("L") >= 10
        mem = page.eval_on_selector(".fl-mem", "e => [e.scrollHeight, e.clientHeight, getComputedStyle(e).overflowY]")
        assert mem[0] <= mem[1] + 1 and mem[2] != "auto" and mem[2] != "scroll", mem
        # sort by peak: the first block drawn has the largest peak of live bytes
        page.select_option(".fl-mem-sort", "peak")
        heads = page.eval_on_selector_all(
            "g.fl-mem-block", "gs => gs.map(g => [g.getBoundingClientRect().top, g.querySelector('text').textContent])")
        first = min(heads)[1].split(" ")[0]
        peaks: dict[str, float] = {}
        for b in {lt["block"] for lt in lifetimes}:
            mine = [lt for lt in lifetimes if lt["block"] == b]
            acts = np.concatenate([np.arange(lt["first_act"], lt["last_act"] + 1) for lt in mine])
            w = np.concatenate([np.full(lt["last_act"] - lt["first_act"] + 1, lt["size"]) for lt in mine])
            peaks[b] = float(max(np.bincount(acts, weights=w)))
        assert peaks[first] == max(peaks.values()), (first, peaks)
        assert peak >= max(peaks.values())
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(".fl-memory").screenshot(path=str(SHOTS / f"memory_{theme}.png"))
