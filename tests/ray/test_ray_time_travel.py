"""Time travel on Ray machines: the debugger keeps no undo records of the other machines' processes, so ``back`` and
``rewind`` say so (and how to reach the act instead); ``writer_of`` reads the timeline and works."""

from __future__ import annotations

import pytest

import flowlab as flow
from flowlab.errors import FlowlabError

from .programs import data, mlp_train

ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra")
pytestmark = pytest.mark.ray


def test_back_on_ray_machines_is_a_clear_error_and_writer_of_still_answers(two_machines):
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(two_machines)
    job = mlp_train(["0:0", "1:0"])
    job(*data(0))
    dbg = flow.debug(job, *data(1))
    dbg.step_n(12)
    with pytest.raises(FlowlabError, match=r"back\(2\): going back is not possible on Ray machines: the other "
                                           r"machines' registers and actors live in their own processes.*"
                                           r"restart\(\) and step_n\(10\)"):
        dbg.back(2)
    with pytest.raises(FlowlabError, match=r"rewind\(to=0\): going back is not possible on Ray machines"):
        dbg.rewind(to=0)
    assert dbg.acts == 12  # nothing undone
    dbg.continue_()
    writer = dbg.writer_of("dense1-weight")  # machine 0's piece: updated in place by its optimizer
    assert writer is not None and writer.actor_name == "dense1-weight_optimizer"
    assert dbg.runtime.actors[writer.actor_id].task.machine_id == 0
