"""The first view of a graph is readable (issue 24): the quickstart's first %%flowjob Plan opened with 5-7 px labels,
and notebook 02's views opened eval_job with the train_job its text describes collapsed. Every label drawn inside
the canvas of a first view is at least 11 px high on screen (its bounding box), in light and dark themes; a job too
big for that opens as one box (the 30-layer fixture). Screenshots: build/e2e-shots/first_view_*.png."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.harness import MOUNT, harness_page, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

import flowlab as flow
import flowlab.typing as tp
from flowlab.viz.payload import jobset_payload, plan_payload

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"
# every label on the canvas with its on-screen box: node labels and cluster (open group) headers
LABELS = """() => { const c = document.querySelector('.fl-canvas').getBoundingClientRect();
  return [...document.querySelectorAll('.fl-canvas .fl-node .fl-label, .fl-canvas .fl-cluster-label')].map(e => {
    const r = e.getBoundingClientRect();
    const inside = r.width > 0 && r.left >= c.left - 1 && r.top >= c.top - 1
      && r.right <= c.right + 1 && r.bottom <= c.bottom + 1;
    return { text: e.textContent, h: r.height, inside }; }); }"""


def _quickstart() -> dict:
    """notebooks/01_quickstart.ipynb's %%flowjob cell: the seed job, called once."""
    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    pad_Job(np.arange(18, dtype=np.float32).reshape((2, 1, 3, 3)))
    session = flow.default_session()
    return plan_payload(session.plan, session.job_set, passes=session.passes)


def _training_mlp():
    """notebooks/02_training_mlp.ipynb's %%flowjob --no-run cell: train_job and eval_job, compiled, not run."""
    flow.clear_default_session()
    batch = 50

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((batch, 1, 8, 8), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Callback[tp.Numpy]:
        initializer = flow.truncated_normal(0.1)
        reshape = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(reshape, 64, activation=flow.nn.relu, kernel_initializer=initializer,
                                   name="hidden")
        logits = flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    @flow.global_function()
    def eval_job(images: tp.Numpy.Placeholder((batch, 1, 8, 8), dtype=flow.float)) -> tp.Numpy:
        reshape = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(reshape, 64, activation=flow.nn.relu, name="hidden")
        return flow.layers.dense(hidden, 10, name="output")

    session = flow.default_session()
    session.try_init()
    return session


@pytest.fixture(scope="module")
def page():
    with harness_page(1200, 900) as pg:
        yield pg


def _mount(page, payload: dict, theme: str) -> list[dict]:
    page.evaluate("t => { document.body.dataset.jpThemeLight = t; document.body.style.background = "
                  "t === 'false' ? '#111' : '#fff'; }", "false" if theme == "dark" else "true")
    page.evaluate(MOUNT, json.loads(json.dumps(payload)))
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')
    page.wait_for_timeout(100)  # the fit runs on the frame after the layout
    return page.evaluate(LABELS)


def _assert_readable(labels: list[dict], *must_see: str) -> None:
    shown = [lab for lab in labels if lab["inside"]]
    small = [(lab["text"], round(lab["h"], 1)) for lab in shown if lab["h"] < 11]
    assert not small, f"labels under 11 px on screen: {small}"
    texts = {lab["text"] for lab in shown}
    for name in must_see:
        assert any(name in t for t in texts), f"{name!r} is not on the canvas; shown: {sorted(texts)}"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_quickstarts_first_plan_opens_with_readable_labels_and_the_users_ops(page, theme):
    labels = _mount(page, _quickstart(), theme)
    _assert_readable(labels, "pad_Job (user)", "Input_0", "reflection_pad2d_0", "Return_0")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"first_view_quickstart_{theme}.png"))


@pytest.mark.parametrize("view", ["jobs", "plan"])
def test_notebook_02_opens_the_train_job_its_text_describes(page, view):
    session = _training_mlp()
    payload = (jobset_payload(session.job_set, session.passes) if view == "jobs"
               else plan_payload(session.plan, session.job_set, passes=session.passes))
    for theme in ("light", "dark"):
        labels = _mount(page, payload, theme)
        _assert_readable(labels, "train_job (user)", "hidden", "output", "(autograd)", "softmax_loss")
        open_groups = page.locator(".fl-cluster-label").all_text_contents()
        assert any("train_job" in t for t in open_groups), open_groups  # drawn open, its layers inside
        assert not any("eval_job" in t for t in open_groups), open_groups
        page.screenshot(path=str(SHOTS / f"first_view_02_{view}_{theme}.png"))


def test_a_job_too_big_to_read_at_a_readable_scale_opens_as_a_box(page):
    """The 30-layer jobset: the train job is a chain of 30 layer boxes, five canvases down at a readable scale, so it
    opens collapsed, every label inside the canvas."""
    page.evaluate("() => window.flowlab.mount('jobset_mlp30')")
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')
    labels = page.evaluate(LABELS)
    _assert_readable(labels, "train_job (user)", "push_job (push)")
    assert all(lab["inside"] for lab in labels), [lab for lab in labels if not lab["inside"]]
