"""Catching the first NaN/Inf across training: the step, the op and register, the undone call, the debugger."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.debug import NanCaught

RNG = np.random.default_rng(0)
BATCHES = [(RNG.normal(size=(8, 4)).astype(np.float32), RNG.normal(size=(8, 1)).astype(np.float32))
           for _ in range(8)]


def _train_job():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 4)), t: tp.Numpy.Placeholder((8, 1))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(4, 1), initializer=flow.constant_initializer(0.5))
        y = flow.matmul(x, w, name="predict")
        loss = flow.math.reduce_mean(flow.math.square(flow.math.subtract(y, t, name="diff"), name="sq"), name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(loss)
        return loss

    return train


def _loop(train, bad_step, bad_value, weights=None):
    weights = [] if weights is None else weights
    for step, (x, t) in enumerate(BATCHES):
        if step == bad_step:
            x = x.copy()
            x[3, 1] = bad_value
        weights.append(flow.get_all_variables()["w"])
        train(x, t)
    return weights


def test_a_huge_value_is_caught_at_its_step_naming_the_op_and_weights_are_kept():
    train = _train_job()
    weights: list[np.ndarray] = []  # the weights before each call
    with flow.debug.catch_nan() as catcher:
        _loop(train, 4, 1e30, weights)  # finite input; its square overflows to inf
    assert catcher.caught and catcher.step == 4 and catcher.calls == 5 and len(weights) == 5
    assert (catcher.job, catcher.op, catcher.lbn) == ("train", "sq", "sq/y_0")
    plan = flow.default_session().plan
    sq_task = next(t for t in plan.tasks if t.exec_sequence[0].name == "sq" and plan.job_names[t.job_id] == "train")
    assert catcher.regst == sq_task.produced_regst_desc["out"].regst_desc_id
    assert catcher.stop.blob.inf_count == 1 and catcher.stop.blob.nan_count == 0
    assert "the first Inf at step 4 (call 4 of train, 0-based): op train/sq wrote sq/y_0" in str(catcher)
    # the bad call was undone: the weights (and the train step counter) are those before step 4
    live = flow.get_all_variables()
    np.testing.assert_array_equal(live["w"], weights[4])
    assert np.isfinite(live["w"]).all() and not np.array_equal(weights[4], weights[3])
    assert int(live["System-Train-TrainStep-train"][0]) == 4
    # the debugger holds the bad call, restarted: continue_ stops on the op that produced the Inf
    stop = catcher.debugger.continue_()
    assert stop.op == "sq" and stop.lbn == "sq/y_0" and stop.blob.inf_count == 1
    np.testing.assert_array_equal(np.asarray(catcher.debugger.blob("w/out")), weights[4])
    # the session goes on training from there, unwatched
    train(*BATCHES[4])
    assert np.isfinite(flow.get_all_variables()["w"]).all()


def test_a_nan_input_is_caught_where_it_came_in():
    train = _train_job()
    with flow.debug.catch_nan() as catcher:
        _loop(train, 2, np.nan)
    assert catcher.step == 2 and catcher.stop.blob.nan_count == 1
    assert catcher.op == "System-Push-Input_0-ForeignInput" and "(it came in with the call's input)" in str(catcher)


def test_clean_training_is_not_stopped_and_matches_unwatched_training():
    train = _train_job()
    with flow.debug.catch_nan() as catcher:
        _loop(train, None, 0.0)
    assert not catcher.caught and catcher.calls == 8 and catcher.false_alarms == 0
    assert str(catcher) == "catch_nan: 8 calls watched, no NaN/Inf"
    watched = flow.get_all_variables()["w"]
    flow.clear_default_session()
    train = _train_job()
    _loop(train, None, 0.0)
    np.testing.assert_array_equal(flow.get_all_variables()["w"], watched)
    assert "lazy_run" not in vars(flow.default_session())  # the watch is gone


def test_inf_can_be_ignored_and_the_error_escapes_without_with():
    train = _train_job()
    catcher = flow.debug.catch_nan(inf=False).start()
    try:
        with pytest.raises(NanCaught) as info:
            _loop(train, 4, 1e30)  # inf in sq at step 4; NaN follows in the update of step 5 at the latest
    finally:
        catcher.close()
    assert info.value.catcher is catcher and catcher.stop.blob.nan_count > 0 and catcher.step >= 4


def test_a_watch_inside_another_wrapper_puts_that_wrapper_back():
    train = _train_job()
    session = flow.default_session()
    seen = []
    original = session.lazy_run

    def outer(desc, args, kwargs):  # as %%flowjob wraps the session's calls
        seen.append(desc.job_name)
        return original(desc, args, kwargs)

    session.lazy_run = outer
    with flow.debug.catch_nan() as catcher:
        train(*BATCHES[0])
    assert session.lazy_run is outer and seen == ["train"] and catcher.calls == 1
    train(*BATCHES[1])
    assert seen == ["train", "train"]
    del session.lazy_run


def test_a_check_the_probe_cannot_reproduce_is_a_false_alarm_and_the_call_stands(monkeypatch):
    """Where memory is reused, a register's bytes at the end of a call may be another register's: the probe on
    the debugger decides, and a call it finds clean keeps the values it computed."""
    module = importlib.import_module("flowlab.debug.nan_watch")  # flowlab.debug is the function flow.debug

    train = _train_job()
    checks = []

    def suspicious_once(array, inf):
        checks.append(True)
        return len(checks) != 1  # the first array of the first call looks bad; it is not

    monkeypatch.setattr(module, "_finite", suspicious_once)
    with flow.debug.catch_nan() as catcher:
        _loop(train, None, 0.0)
    assert not catcher.caught and catcher.false_alarms == 1 and catcher.calls == 8
    watched = flow.get_all_variables()
    flow.clear_default_session()
    train = _train_job()
    _loop(train, None, 0.0)
    unwatched = flow.get_all_variables()
    assert watched.keys() == unwatched.keys()
    for name in watched:
        np.testing.assert_array_equal(watched[name], unwatched[name])


def test_on_two_devices_every_piece_of_a_variable_is_put_back():
    """Data parallel on 2 devices: each device updates its own copy of ``w``; catching the bad call must undo it on
    both (it once restored device 0's piece only, leaving device 1 with the Inf-poisoned update)."""
    flow.config.cpu_device_num(2)
    train = _train_job()
    with flow.debug.catch_nan() as catcher:
        _loop(train, 2, 1e30)
    assert catcher.caught and catcher.step == 2
    pieces = flow.default_session().variables()["w"]
    assert len(pieces.arrays) == 2
    for array in pieces.arrays:
        assert np.isfinite(array).all()
        np.testing.assert_array_equal(array, pieces.arrays[0])
