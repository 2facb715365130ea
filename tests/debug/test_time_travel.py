"""Time travel in the debugger (issue 27 §1): ``back``, ``rewind``, ``writer_of``, ``readers_of``.

The oracle is a fresh debugger stepped to the same act: the whole protocol state (replay/state.py's
``protocol_state``: every actor's slots and counters, every register's counters and bytes, every memory block, the
runtime's queues and buffers), the next actor, the timeline, the recording, the variables and breakpoint hits must
be equal; stepping on from there must end bit-equal to an uninterrupted run.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import FlowlabError
from flowlab.replay.state import differences, protocol_state

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
BATCH, FEATURES = 6, 10


@pytest.fixture
def pad_job():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return pad_Job


def define_train(devices: str, dropout: bool):
    """A train job with a momentum optimizer (variables updated in place) and, optionally, a seeded dropout (a kernel
    with a random stream of its own); on ``devices`` (``"0:0-1"``: data parallel dense1, dense2's weight split)."""

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((BATCH, FEATURES)),
                  y: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", devices):
            hidden = flow.layers.dense(x, 8, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                                       name="dense1")
            if dropout:
                hidden = flow.nn.dropout(hidden, rate=0.3, seed=5)
            logits = flow.layers.dense(hidden, 4, kernel_initializer=flow.truncated_normal(0.1), name="dense2",
                                       model_distribute=flow.distribute.split(0) if "-" in devices else None)
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return train_job


def batch():
    rng = np.random.default_rng(3)
    return rng.standard_normal((BATCH, FEATURES)).astype(np.float32), rng.integers(0, 4, BATCH).astype(np.int32)


@pytest.fixture
def train_call():
    flow.clear_default_session()
    job = define_train("0:0", dropout=True)
    x, y = batch()
    job(x, y)  # a second call's debugger: the variables are not their initial values any more
    return job, (x, y)


@pytest.fixture
def two_device_call():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    job = define_train("0:0-1", dropout=False)
    x, y = batch()
    job(x, y)
    return job, (x, y)


def fresh_at(job, args, k: int):
    dbg = flow.debug(job, *args)
    for _ in range(k):
        dbg.step()
    return dbg


def assert_same(dbg, fresh) -> None:
    """Everything the debugger and the protocol can observe is as in ``fresh``."""
    assert dbg.acts == fresh.acts
    diffs = differences(protocol_state(dbg.runtime), protocol_state(fresh.runtime))
    assert not diffs, "\n".join(diffs)
    assert dbg.next_actor() == fresh.next_actor()
    assert [str(e.event) for e in dbg.timeline()] == [str(e.event) for e in fresh.timeline()]
    assert dbg.recording().to_dict() == fresh.recording().to_dict()
    for name in flow.default_session().variables():
        np.testing.assert_array_equal(dbg.value(name), fresh.value(name), err_msg=name)
    assert [p is None or np.asarray(p).tobytes() for p in dbg._pulled] == \
        [p is None or np.asarray(p).tobytes() for p in fresh._pulled]


def bits(value) -> bytes:
    return np.asarray(value).tobytes()


def variables_of(dbg) -> dict[str, bytes]:
    return {name: bits(dbg.value(name)) for name in flow.default_session().variables()}


def check_back_at(job, args, whole, ks, ms) -> None:
    """For each (k, m): step to k + m, back(m) equals a fresh debugger at k; then on to the end equals ``whole``."""
    dbg = flow.debug(job, *args)
    for k in ks:
        for m in ms:
            if k + m > whole.acts:
                continue
            dbg.restart()
            dbg.step_n(k + m)
            event = dbg.back(m)
            assert (event is None) == (k == 0) and (k == 0 or event.seq == k - 1)
            assert_same(dbg, fresh_at(job, args, k))
            dbg.continue_()
            assert dbg.acts == whole.acts and bits(dbg.result) == bits(whole.result)
            assert variables_of(dbg) == variables_of(whole)


def test_back_on_the_seed_job_equals_a_fresh_debugger_and_steps_on_to_the_same_result(pad_job):
    whole = flow.debug(pad_job, X)
    whole.continue_()
    assert whole.acts == 30
    check_back_at(pad_job, (X,), whole, range(0, 30, 2), (1, 3, 30))
    np.testing.assert_array_equal(whole.result, np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


def test_back_on_a_train_job_with_momentum_and_dropout(train_call):
    job, args = train_call
    whole = flow.debug(job, *args)
    whole.continue_()
    before = {name: bits(v) for name, v in flow.get_all_variables().items()}
    check_back_at(job, args, whole, range(0, whole.acts, max(1, whole.acts // 8)), (1, 7, whole.acts))
    # the full way back: the debugger's variables are the session's again, which the debugger never touched
    dbg = flow.debug(job, *args)
    dbg.continue_()
    dbg.rewind(to=0)
    assert variables_of(dbg) == before == {name: bits(v) for name, v in flow.get_all_variables().items()}
    dbg.continue_()
    assert bits(dbg.result) == bits(whole.result) and variables_of(dbg) == variables_of(whole)


def test_back_on_two_devices_with_threads_stepped_one_by_one(two_device_call):
    job, args = two_device_call
    whole = flow.debug(job, *args)
    whole.continue_()
    check_back_at(job, args, whole, range(0, whole.acts, max(1, whole.acts // 6)), (1, 9))
    threads = sorted({(t.machine_id, t.thrd_id) for t in flow.default_session().plan.tasks})
    assert len(threads) >= 2
    # step chosen threads, go back, step them again: the same acts
    dbg = flow.debug(job, *args)
    dbg.step_n(whole.acts // 2)
    taken = []
    for _ in range(8):
        thread = next((t for t in reversed(threads) if dbg.next_actor(thread=t)), None)
        taken.append(str(dbg.step(thread=thread) if thread else dbg.step()))
    dbg.back(8)
    again = [str(dbg.step(thread=t) if (t := next((t for t in reversed(threads) if dbg.next_actor(thread=t)), None))
                 else dbg.step()) for _ in range(8)]
    assert again == taken


def test_rewind_goes_to_any_act_and_names_the_range_outside_it(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.step_n(12)
    assert dbg.rewind(to=12).seq == 11  # where it is: nothing undone
    assert dbg.rewind(to=5).seq == 4 and dbg.acts == 5
    assert_same(dbg, fresh_at(pad_job, (X,), 5))
    for bad in (-1, 6, 1.5, "3"):
        with pytest.raises(ValueError, match=r"rewind\(to=.*\): the act must be in \[0, 5\]"):
            dbg.rewind(to=bad)
    with pytest.raises(ValueError, match=r"back\(n=6\): n must be an int in \[0, 5\]"):
        dbg.back(6)
    assert dbg.rewind(to=0) is None and dbg.acts == 0
    assert_same(dbg, flow.debug(pad_job, X))


def test_a_rewind_past_the_history_kept_says_how_far_it_reaches(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.history_limit = 10
    dbg.step_n(25)
    assert dbg.history.acts == 10 and dbg.history.oldest == 15
    with pytest.raises(FlowlabError, match=r"rewind\(to=3\): act 3 is older than the 10 acts kept \(back to act "
                                           r"15\); raise history_limit \(dbg.history_limit = 22\)"):
        dbg.rewind(to=3)
    assert dbg.acts == 25  # nothing undone
    dbg.rewind(to=15)
    assert_same(dbg, fresh_at(pad_job, (X,), 15))
    with pytest.raises(FlowlabError, match="act 14 is older than the 10 acts kept"):
        dbg.back()
    with pytest.raises(ValueError, match="history_limit must be an int >= 0"):
        dbg.history_limit = -1


def test_history_memory_is_stated_per_act(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.continue_()
    stats = dbg.history
    assert stats.acts == 30 and stats.oldest == 0
    # the pad act keeps the 2x1x5x5 float32 it overwrites, at least
    assert stats.max_bytes >= 200 and stats.median_bytes <= stats.max_bytes <= stats.nbytes
    assert 2 * 25 * 4 <= stats.register_bytes < stats.nbytes
    assert str(stats).startswith("history: 30 acts kept (limit 1000), back to act 0;")


def test_writer_of_and_readers_of_name_the_hand_known_acts(pad_job):
    dbg = flow.debug(pad_job, X)
    assert dbg.writer_of("reflection_pad2d_0") is None  # nothing ran yet
    dbg.continue_()
    writer = dbg.writer_of("reflection_pad2d_0/y_0")
    assert (writer.seq, writer.actor_name, writer.written) == (17, "reflection_pad2d_0", ((1, 0),))
    assert str(writer) == "#17 reflection_pad2d_0 act 1 [reference] read[r0] wrote[r1]"
    assert [e.actor_name for e in dbg.readers_of("reflection_pad2d_0/y_0")] == ["Return_0"]
    assert dbg.writer_of("pad_Job/Input_0/out").actor_name == "Input_0" and \
        dbg.writer_of("pad_Job/Input_0/out").seq == 16
    assert [e.seq for e in dbg.readers_of("pad_Job/Input_0/out")] == [17]
    # back to the writer: the blob is as right after it, and the act is the timeline's last
    assert dbg.rewind(to=writer) == writer and dbg.acts == 18
    np.testing.assert_array_equal(dbg.value("reflection_pad2d_0/y_0"),
                                  np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    assert dbg.readers_of("reflection_pad2d_0/y_0") == []
    with pytest.raises(KeyError, match="no blob 'nope'"):
        dbg.writer_of("nope")


def test_writer_of_a_variable_is_its_optimizer_update(train_call):
    job, args = train_call
    dbg = flow.debug(job, *args)
    assert dbg.writer_of("dense1-weight") is None
    dbg.continue_()
    writer = dbg.writer_of("dense1-weight")
    op = dbg.runtime.actors[writer.actor_id].task.exec_sequence[0]
    assert (writer.actor_name, op.op_type) == ("dense1-weight_optimizer", "momentum_update")  # in place: a read
    final = bits(dbg.value("dense1-weight"))
    dbg.rewind(to=writer.seq)  # right before the update
    assert bits(dbg.value("dense1-weight")) != final
    event = dbg.step()
    assert str(event) == str(writer) and bits(dbg.value("dense1-weight")) == final


def test_back_undoes_an_injection_made_after_the_acts_it_undoes(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.step_n(17)  # Input_0 wrote r0
    dbg.inject("pad_Job/Input_0/out", np.ones_like(X))
    dbg.step()  # the pad reads the injected ones
    np.testing.assert_array_equal(dbg.value("reflection_pad2d_0/y_0"), np.ones((2, 1, 5, 5), np.float32))
    dbg.back()  # the injection, made after act 17, stays
    np.testing.assert_array_equal(dbg.value("pad_Job/Input_0/out"), np.ones_like(X))
    assert dbg.injections == [(17, "Input_0/out")]
    dbg.back()  # act 17 and the injection after it are undone
    assert dbg.injections == []
    assert_same(dbg, fresh_at(pad_job, (X,), 16))


def test_breakpoint_hits_and_a_stop_go_back_too(pad_job):
    dbg = flow.debug(pad_job, X)
    bp = dbg.break_on(op="reflection_pad2d_0")
    stop = dbg.continue_()
    assert stop.reason == "breakpoint" and bp.hits == 1 and dbg.acts == 17
    dbg.continue_()  # resumes past the breakpoint to the end
    assert dbg.finished
    dbg.rewind(to=17)
    assert bp.hits == 1 and not dbg.finished
    assert dbg.continue_().reason == "finished"  # the stop before the pad was taken: it runs on, as it did
    dbg.rewind(to=3)
    assert bp.hits == 0
    assert dbg.continue_().reason == "breakpoint" and bp.hits == 1 and dbg.acts == 17


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["step", "back", "rewind"]), st.integers(0, 30)), min_size=1, max_size=8))
def test_random_sequences_of_step_back_and_rewind(pad_job, moves):
    dbg = flow.debug(pad_job, X)
    for move, n in moves:
        if move == "step":
            dbg.step_n(n)
        elif move == "back":
            dbg.back(min(n, dbg.acts))
        else:
            dbg.rewind(to=min(n, dbg.acts))
    assert_same(dbg, fresh_at(pad_job, (X,), dbg.acts))
    dbg.continue_()
    np.testing.assert_array_equal(dbg.result, np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


def test_catch_nan_steps_back_from_the_culprit_through_its_inputs_writers():
    rng = np.random.default_rng(0)
    x, t = rng.normal(size=(8, 4)).astype(np.float32), rng.normal(size=(8, 1)).astype(np.float32)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 4)), t: tp.Numpy.Placeholder((8, 1))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(4, 1), initializer=flow.constant_initializer(0.5))
        y = flow.matmul(x, w, name="predict")
        loss = flow.math.reduce_mean(flow.math.square(flow.math.subtract(y, t, name="diff"), name="sq"), name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(loss)
        return loss

    flow.clear_default_session()
    train(x, t)
    bad = x.copy()
    bad[3, 1] = 1e30  # finite; its square overflows to inf
    with flow.debug.catch_nan() as catcher:
        train(bad, t)
    dbg = catcher.debugger
    stop = dbg.continue_()
    assert stop.op == "sq"
    culprit = dbg.writer_of("sq/y_0")
    assert culprit.seq == dbg.acts - 1 and culprit.actor_name == "sq"
    w = flow.get_all_variables()["w"]
    diff_writer = dbg.writer_of("diff")  # the culprit's input
    assert diff_writer.actor_name == "diff" and diff_writer.seq < culprit.seq
    dbg.rewind(to=diff_writer)
    fresh = fresh_at(train, (bad, t), dbg.acts)
    assert_same(dbg, fresh)
    want = bad.astype(np.float64) @ w.astype(np.float64) - t
    np.testing.assert_allclose(dbg.value("diff"), want, rtol=1e-5)
    assert np.isfinite(dbg.value("diff")).all()
    predict_writer = dbg.writer_of("predict")  # and its input's writer in turn
    dbg.rewind(to=predict_writer)
    np.testing.assert_allclose(dbg.value("predict"), bad.astype(np.float64) @ w.astype(np.float64), rtol=1e-5)
    assert_same(dbg, fresh_at(train, (bad, t), dbg.acts))
    stop = dbg.continue_()  # forward again: the same culprit
    assert stop.op == "sq" and stop.blob.inf_count == 1 and dbg.acts == culprit.seq + 1


def test_a_breakpoint_set_later_counts_no_hit_before_it_was_set(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.step_n(5)
    bp = dbg.break_on(op="System-Main-ReentrantLock_0")
    assert dbg.continue_().reason == "breakpoint" and bp.hits == 1
    dbg.step()  # past it
    dbg.rewind(to=5)
    assert bp.hits == 0 and dbg.breakpoints[0] is bp  # the breakpoint stays set
    assert dbg.continue_().reason == "breakpoint" and bp.hits == 1
