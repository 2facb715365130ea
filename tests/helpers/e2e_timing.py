"""The text of an MLP's Plan, for the browser tests of big jobs and timing."""

from __future__ import annotations

import json

import flowlab as flow
import flowlab.typing as tp
from flowlab.viz.payload import plan_payload
from flowlab.viz.payload_pack import stored


def _mlp_plan_text(layers: int, width: int = 128) -> tuple[str, int]:
    flow.clear_default_session()

    @flow.global_function(type="train")
    def mlp_train(x: tp.Numpy.Placeholder((16, width)), y: tp.Numpy.Placeholder((16,), dtype=flow.int32)) -> tp.Numpy:
        h = x
        for i in range(layers):
            h = flow.layers.dense(h, width, activation=flow.nn.relu, name=f"layer{i}")
        logits = flow.layers.dense(h, 10, name="out")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    session = flow.default_session()
    session.try_init()
    payload = plan_payload(session.plan, session.job_set, passes=session.passes)
    return json.dumps(stored(payload)), len(session.plan.tasks)
