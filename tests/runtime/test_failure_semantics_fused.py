"""Failure semantics of fused replays (issue 13): a fused call copies, before it runs, only the variables that a
failure could leave half-written (those written at or before its last act that can fail), and a failing fused
call still leaves every variable as after the last completed step."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import flowlab as flow
from flowlab.errors import KernelError
from flowlab.replay import layer as layer_module
from flowlab.replay.fused import FUSE_AFTER
from tests.helpers.failure_semantics import BATCHES, assert_same_variables, define_train

STEP = "System-Train-TrainStep-train_job"


@pytest.fixture(autouse=True)
def numba_replayed(monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")  # fusable kernels: the label checks are checked fused calls
    # the guard copies what the segment's acts can leave half-written, which differs while it compiles (act by act)
    # and once compiled: the tests look at a compiled one, compiled in the call that fuses
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    yield
    flow.clear_default_session()


def train_schedule():
    [schedule] = [s for s in flow.default_session().runtime.layer.schedules.values() if "train_job" in s.key]
    return schedule


def test_a_fused_step_copies_only_what_precedes_its_last_check():
    flow.clear_default_session()
    job = define_train("momentum")
    for x, y in BATCHES[: FUSE_AFTER + 3]:
        job(x, y)
    schedule = train_schedule()
    assert schedule.fused is not None
    # Every update follows the cross entropy's label checks; only the step counter is assigned before the last
    # one (the gradient's own check).
    assert schedule.guarded == (STEP,)
    guard = flow.default_session()._snapshots[schedule.key]
    assert guard.taken.names == (STEP,)
    assert len(guard.all.names) > 4  # the weights, biases and momenta: copied by the protocol's calls


def test_a_bad_label_in_a_fused_step_leaves_the_last_steps_variables_and_training_goes_on():
    good = BATCHES[:12]
    flow.clear_default_session()
    ref = define_train("momentum")
    want_losses = [ref(x, y) for x, y in good]
    want_vars = flow.get_all_variables()
    flow.clear_default_session()
    job = define_train("momentum")
    losses = [job(x, y) for x, y in good[: FUSE_AFTER + 2]]
    assert train_schedule().fused is not None
    before = flow.get_all_variables()
    bad_y = good[FUSE_AFTER + 2][1].copy()
    bad_y[1] = -1
    with pytest.raises(KernelError, match=r"sparse_softmax_cross_entropy\w*' .* raised IndexError"):
        job(good[FUSE_AFTER + 2][0], bad_y)
    assert flow.default_session().cancelled_calls == 1
    assert_same_variables(flow.get_all_variables(), before)
    losses += [job(x, y) for x, y in good[FUSE_AFTER + 2:]]
    for got, want in zip(losses, want_losses):
        np.testing.assert_array_equal(got, want)
    assert_same_variables(flow.get_all_variables(), want_vars)


def test_an_act_that_can_fail_after_an_update_guards_every_variable_written_up_to_it(monkeypatch):
    """The class: were an update's act able to fail, it and everything written before it would be copied."""
    flow.clear_default_session()
    job = define_train("momentum")
    for x, y in BATCHES[: FUSE_AFTER + 1]:
        job(x, y)
    schedule = train_schedule()
    rt = flow.default_session().runtime
    writes = layer_module.task_writes(rt.plan)
    segment = next(step for step in schedule.fused if isinstance(step, layer_module.Segment))
    updates = [actor for actor in segment.actors if actor.task.task_id in writes and actor.name.endswith("optimizer")]
    assert len(updates) == 4
    failing = updates[1]  # the second update: the first and this one's variables are written up to it
    real = layer_module.fused_call_of

    def checked_at(actor, step):
        call = real(actor, step)
        return dataclasses.replace(call, checked=True) if actor is failing else call

    monkeypatch.setattr(layer_module, "fused_call_of", checked_at)
    got = set(layer_module.guarded_variables(rt, schedule))
    want = {STEP, *writes[updates[0].task.task_id], *writes[failing.task.task_id]}
    assert got == want
    assert not got & set(writes[updates[2].task.task_id])  # written after the last act that can fail
