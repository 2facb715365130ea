"""Widget-free outputs of one payload: show_plan (with diff marks) and show_run (a recorded run)."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.notebook import show_plan, show_run
from flowlab.viz.payload_pack import unpack

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


@pytest.fixture
def pad_job():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)
    return pad_Job


def test_show_plan_is_a_plan_output_with_marks(pad_job):
    plan = flow.default_session().plan
    pad = plan.task("reflection_pad2d_0").task_id
    view = show_plan(plan, flow.default_session().job_set, marks={f"t:{pad}": "changed"}, title="B side")
    bundle = view._repr_mimebundle_()
    payload = unpack(bundle["application/vnd.flowlab.plan+json"])
    assert payload["title"] == "B side" and json.loads(json.dumps(payload)) == payload
    assert next(n for n in payload["graph"]["nodes"] if n["id"] == f"t:{pad}")["classes"] == ["changed"]
    assert "<svg" in bundle["image/svg+xml"] and bundle["text/plain"].startswith("B side\nplan: 18 tasks")
    other = html.unescape(show_plan(plan)._repr_mimebundle_()["image/svg+xml"])  # Graphviz writes - as &#45;
    assert f'id="{view.id_prefix}' in html.unescape(bundle["image/svg+xml"]) and f'id="{view.id_prefix}' not in other


def test_show_run_from_parts(pad_job):
    plan = flow.default_session().plan
    pad = plan.task("reflection_pad2d_0").task_id
    recording = {"acts": [{"index": 0, "node": pad, "actor": "reflection_pad2d_0", "job": "pad_Job",
                           "reads": [0], "writes": [1], "blobs": {}}], "memory": {"blocks": [], "lifetimes": []}}
    bundle = show_run(plan=plan, recording=recording, title="one act")._repr_mimebundle_()
    payload = unpack(bundle["application/vnd.flowlab.run+json"])
    assert payload["kind"] == "run" and payload["acts"][0]["node"] == f"t:{pad}"
    assert bundle["text/plain"] == "one act\n#0 pad_Job/reflection_pad2d_0 read ['r:0'] wrote ['r:1']"
    with pytest.raises(TypeError, match=r"needs a debugger \(show_run\(dbg\)\) or plan= and recording="):
        show_run()


def test_show_run_of_a_debugger(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.run_to("pad_Job/reflection_pad2d_0")
    dbg.step()
    payload = unpack(show_run(dbg)._repr_mimebundle_()["application/vnd.flowlab.run+json"])
    plan = flow.default_session().plan
    assert payload["acts"][-1]["node"] == f"t:{plan.task('reflection_pad2d_0').task_id}"
    assert payload["title"] == f"run of pad_Job: {len(payload['acts'])} acts" and payload["memory"]["blocks"]
    json.dumps(payload, allow_nan=False)
