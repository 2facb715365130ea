"""The generated call (flowlab/replay/callgen.py): a job function's fused replayed calls as one Python function.

It must be the layer's replay (itself the protocol, tests/replay/test_replay_proof.py) bit for bit, take only the
calls it
is sure of (every other call goes the general way, with its checks and errors), fail as the general path fails
(a cancelled call, the snapshot restored, a deferred Ctrl-C delivered), and print itself readably.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import JobArgumentError, KernelError
from flowlab.replay.fused import FUSE_AFTER
from flowlab.replay.state import differences, protocol_state
from flowlab.session import Session

# the compiled segment (and the generated call) must run by a given call: compiled in the call that fuses
pytestmark = pytest.mark.usefixtures("fuse_in_call")

B, D, H, C = 8, 6, 5, 4
RNG = np.random.default_rng(5)
BATCHES = [(RNG.standard_normal((B, D)).astype(np.float32), RNG.integers(0, C, B).astype(np.int32))
           for _ in range(FUSE_AFTER + 8)]
WARM = FUSE_AFTER + 1  # calls after which the train call is generated (a capture, then FUSE_AFTER replays: fused)


@pytest.fixture(autouse=True)
def replayed(monkeypatch):
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")


def define_train(watched: list[np.ndarray] | None = None):
    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, H, activation=flow.nn.relu, kernel_initializer=flow.random_normal_initializer(),
                              name="hidden")
        logits = flow.layers.dense(h, C, kernel_initializer=flow.random_normal_initializer(), name="out")
        if watched is not None:
            flow.watch(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return train_job


def generated(name: str = "train_job"):
    return flow.default_session().generated_calls[name]


def bits(a: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    return a.dtype.str, a.shape, a.tobytes()


def session_run(calls, callgen: bool, monkeypatch, watch: bool = False, replay: bool = True, devices: int = 1):
    """Outputs, watched values, variables and protocol state after ``calls(job)`` in a fresh session on ``devices``
    CPU devices."""
    monkeypatch.setenv("FLOWLAB_CALLGEN", "1" if callgen else "0")
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    watched: list[np.ndarray] = []
    job = define_train(watched if watch else None)
    outputs = calls(job)
    session = flow.default_session()
    return {"outputs": [bits(np.asarray(o)) for o in outputs], "watched": [bits(w) for w in watched],
            "variables": {k: bits(v) for k, v in flow.get_all_variables().items()},
            "state": protocol_state(session.runtime), "generated": dict(session.generated_calls)}


def assert_same(a, b) -> None:
    assert a["outputs"] == b["outputs"]
    assert a["watched"] == b["watched"]
    assert a["variables"] == b["variables"]
    assert a["state"] == b["state"], "\n".join(differences(a["state"], b["state"]))


def test_the_generated_call_is_the_layers_replay_bit_for_bit(monkeypatch):
    def calls(job):
        return [job(x, y) for x, y in BATCHES]

    general = session_run(calls, False, monkeypatch, watch=True)
    assert general["generated"] == {}
    fast = session_run(calls, True, monkeypatch, watch=True)
    assert fast["generated"]["train_job"].runs == len(BATCHES) - WARM
    assert len(fast["watched"]) == len(BATCHES)
    assert_same(general, fast)


def test_several_schedules_of_a_call_are_one_function_with_a_branch_each(monkeypatch):
    """On two devices stepped by one thread, a SliceBoxing's two registers rotate: consecutive calls start from
    other protocol states, each with its own schedule (which ends where another starts). The generated call has a
    branch per schedule, chosen by the state the call starts from, and is the protocol bit for bit."""
    monkeypatch.setattr("flowlab.replay.layer.FUSE_AFTER", 3)
    monkeypatch.setenv("FLOWLAB_THREADS", "0")  # no lanes: the layer replays the whole schedule in this thread
    def calls(job):
        return [job(x, y) for x, y in BATCHES * 3]

    protocol = session_run(calls, False, monkeypatch, watch=True, replay=False, devices=2)
    fast = session_run(calls, True, monkeypatch, watch=True, devices=2)
    call = fast["generated"]["train_job"]
    assert len(call.schedules) >= 2 and "            if state is STATE0:\n" in call.source, call.source
    starts = {id(s): start for (_key, start), s in call.namespace["layer"].schedules.items()}
    assert any(starts[id(s)] != id(s.state) for s in call.schedules)  # a schedule that ends where it does not start
    assert call.runs >= len(BATCHES), call.runs
    assert_same(protocol, fast)


def test_a_replayed_call_is_one_generated_function_and_the_numba_call():
    """Counted, not timed: the Python functions and C functions one call makes (28 + 34 on the layer's general
    path before the generated call)."""
    import sys

    job = define_train()
    for x, y in BATCHES[:WARM]:
        job(x, y)
    counts = {"call": 0, "c_call": 0}

    def count(frame, event, arg):
        if event in counts:
            counts[event] += 1

    x, y = BATCHES[WARM]
    sys.setprofile(count)
    job(x, y)
    sys.setprofile(None)
    assert generated().runs == 1
    # run, default_session, lazy_run, the generated call, the segment's dispatcher
    assert counts["call"] <= 5, counts
    assert counts["c_call"] <= 10, counts


def test_calls_it_does_not_take_go_the_general_way_with_their_checks(monkeypatch):
    """Keyword arguments, a Fortran-ordered array: the general path runs them, the same values come out, and the
    generated call takes the next exact call again. A subscriber does not move a call off it: its act events are
    built from the schedule and name the generated call. Bad input is still explained at the call."""

    def calls(job):
        out = [job(x, y) for x, y in BATCHES[:WARM]]
        x, y = BATCHES[WARM]
        out.append(job(x=x, y=y))
        x, y = BATCHES[WARM + 1]
        out.append(job(np.asfortranarray(x.reshape(B, D)), y))
        rt = flow.default_session().runtime
        events = []
        rt.hooks.append(events.append)
        x, y = BATCHES[WARM + 2]
        out.append(job(x, y))
        rt.hooks.remove(events.append)
        assert events and {e.executor for e in events} <= {"callgen", "fused"}  # no longer the protocol
        out += [job(x, y) for x, y in BATCHES[WARM + 3:]]
        return out

    general = session_run(calls, False, monkeypatch)
    fast = session_run(calls, True, monkeypatch)
    runs = fast["generated"]["train_job"].runs
    assert runs == len(BATCHES) - WARM - 2  # all but the keyword and the Fortran-ordered calls
    assert_same(general, fast)

    flow.clear_default_session()
    job = define_train()  # bad input after generation: the general path's error, and the session goes on
    for x, y in BATCHES[:WARM + 1]:
        job(x, y)
    assert generated().runs == 1
    with pytest.raises(JobArgumentError, match=r"argument 'x' must be .* got dtype float64"):
        job(BATCHES[0][0].astype(np.float64), BATCHES[0][1])
    job(*BATCHES[WARM + 1])
    assert generated().runs == 2


def test_a_failing_generated_call_is_cancelled_and_training_goes_on(monkeypatch):
    good = BATCHES[:WARM + 4]
    flow.clear_default_session()
    ref = define_train()
    want = [bits(ref(x, y)) for x, y in good]
    want_vars = {k: bits(v) for k, v in flow.get_all_variables().items()}

    flow.clear_default_session()
    job = define_train()
    got = [bits(job(x, y)) for x, y in good[:WARM + 1]]
    assert generated().runs == 1
    before = {k: bits(v) for k, v in flow.get_all_variables().items()}
    general: list[object] = []
    run_jobs = Session._run_jobs
    monkeypatch.setattr(Session, "_run_jobs", lambda self, *a: general.append(a) or run_jobs(self, *a))
    bad_y = good[WARM + 1][1].copy()
    bad_y[2] = C  # one past the last class: the fused label check fails
    with pytest.raises(KernelError, match=r"sparse_softmax_cross_entropy\w*' .* raised IndexError"):
        job(good[WARM + 1][0], bad_y)
    assert general == []  # the generated call ran it, and cancelled it itself
    session = flow.default_session()
    assert session.cancelled_calls == 1 and session.generated_calls == {}  # a new runtime: generated again later
    assert {k: bits(v) for k, v in flow.get_all_variables().items()} == before
    got += [bits(job(x, y)) for x, y in good[WARM + 1:]]
    assert got == want
    assert {k: bits(v) for k, v in flow.get_all_variables().items()} == want_vars


def test_a_sigint_inside_a_generated_call_is_delivered_after_it(monkeypatch):
    """The call finishes (its step counts), then Ctrl-C is raised; its watched values are dropped; the next call
    is right and generated again."""
    watched: list[np.ndarray] = []
    job = define_train(watched)
    for x, y in BATCHES[:WARM]:
        job(x, y)
    call = generated()
    [segment] = [name for name in call.namespace if re.fullmatch(r"segment\d+", name)]
    real = call.namespace[segment]

    def interrupting(*args):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.002)  # Python runs the handler between bytecodes: here, were it not deferred
        return real(*args)

    monkeypatch.setitem(call.namespace, segment, interrupting)
    seen = len(watched)
    with pytest.raises(KeyboardInterrupt):
        job(*BATCHES[WARM])
    monkeypatch.setitem(call.namespace, segment, real)
    assert call.runs == 1 and len(watched) == seen  # it ran to its end; its watched value went unread
    assert flow.default_session().cancelled_calls == 0
    rest = [bits(job(x, y)) for x, y in BATCHES[WARM + 1:]]
    assert call.runs == 1 + len(rest)

    flow.clear_default_session()
    ref = define_train()
    want = [bits(ref(x, y)) for x, y in BATCHES]
    assert rest == want[WARM + 1:]


def test_calls_from_another_thread_run_it_too():
    job = define_train()
    for x, y in BATCHES[:WARM]:
        job(x, y)
    out: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: out.extend(job(x, y) for x, y in BATCHES[WARM:]))
    worker.start()
    worker.join()
    assert generated().runs == len(BATCHES) - WARM
    threaded = [bits(a) for a in out]
    flow.clear_default_session()
    ref = define_train()
    assert [bits(ref(x, y)) for x, y in BATCHES][WARM:] == threaded


def test_every_kind_of_signature_is_generated_and_returns_what_the_general_path_returns(monkeypatch):
    """No argument, a tuple and a dict of blobs, None: the generated call puts the result together as the general
    path does (one blob: the pulled array itself)."""

    def define():
        @flow.global_function()
        def nothing_in() -> tp.Numpy:
            v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(2.0))
            return v * 3.0

        @flow.global_function()
        def pair(x: tp.Numpy.Placeholder((2, 2))) -> tuple[tp.Numpy, tp.Numpy]:
            return x + 1.0, x * 2.0

        @flow.global_function()
        def named(x: tp.Numpy.Placeholder((3,)),
                  k: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> dict[str, tp.Numpy]:
            return {"y": flow.math.relu(x), "k": k + 1}

        @flow.global_function(type="train")
        def quiet(x: tp.Numpy.Placeholder((4,))) -> None:
            w = flow.get_variable("w", shape=(4,), initializer=flow.constant_initializer(1.0))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(
                flow.math.reduce_sum(w * x))

        return nothing_in, pair, named, quiet

    def calls():
        nothing_in, pair, named, quiet = define()
        out = []
        for k in range(WARM + 3):
            x = np.arange(4, dtype=np.float32) + k
            out.append(nothing_in())
            out.extend(pair(x.reshape(2, 2)))
            result = named(x[:3] - 2, np.arange(3, dtype=np.int32) * k)
            out += [result["y"], result["k"]]
            assert quiet(x) is None
        out.append(flow.get_all_variables()["w"])
        return [bits(np.asarray(o)) for o in out]

    monkeypatch.setenv("FLOWLAB_CALLGEN", "0")
    flow.clear_default_session()
    want = calls()
    monkeypatch.setenv("FLOWLAB_CALLGEN", "1")
    flow.clear_default_session()
    assert calls() == want
    runs = {name: call.runs for name, call in flow.default_session().generated_calls.items()}
    assert runs == {"nothing_in": 3, "pair": 3, "named": 3, "quiet": 3}, runs


def test_the_source_reads_as_the_call_it_runs():
    @flow.global_function()
    def double(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.math.relu(x) * 2.0

    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    for _ in range(FUSE_AFTER + 2):
        np.testing.assert_array_equal(double(x), np.maximum(x, 0) * 2)
    call = generated("double")
    assert repr(call).startswith("<generated call of double: 1 schedule(s), ")
    source = re.sub(r"/\S*/fused/segment_\w+\.py", "<cache>/fused/segment_<digest>.py", call.source)
    assert source == SOURCE, source


SOURCE = '''\
# Generated by flowlab (replay/callgen.py): the fused replayed calls of double, one branch
# per schedule. general: the session's general path runs a call this function does not take.
def call(args, kwargs):
    global runs  # calls this function ran (GeneratedCall.runs)
    if kwargs or len(args) != 1:
        return general(args, kwargs)  # the general path checks, and explains, every other call
    in_x, = args
    if (type(in_x) is not ndarray or in_x.shape != (2, 3) or in_x.strides != (12, 4)
            or (in_x.dtype is not DTYPE0 and in_x.dtype != DTYPE0)):  # float32
        return general(args, kwargs)
    with lock:
        known = layer.known
        if (known is None or known[1] != rt._seq or known[2] != rt.launched or rt.layer is not layer
                or rt.closed or session.runtime is not rt or session.status is not RUNNING):
            state = None  # something acted or was launched since the layer knew the state
        else:
            state = known[0]
        if state is not STATE0:
            deferring = None  # not a state a schedule starts at: the general path runs the call
        elif get_ident() != MAIN_THREAD:  # no SIGINT reaches another thread
            deferring = False
        elif type(getsignal(SIGINT)) is Wrapper:  # call_guard.INTERRUPTS.enter(), inlined
            interrupts.depth += 1
            deferring = True
        else:  # a handler installed over flowlab's: the general path wraps it
            deferring = None
        if deferring is not None:
            try:
                # CapturedCall(System-Push-Input_0 + double + System-Pull-Return_0: 32 acts, 6 kernels, 3
                # notifies, fused into 1 segment + 3 steps)
                guard.taken = SNAPSHOT0
                rt.launched = known[2] + 3  # the call's launches (no instance is made)
                pulled0 = empty((2, 3), DTYPE0)  # System-Pull-Return_0's copy
                # 6 acts in one Numba call: <cache>/fused/segment_<digest>.py
                failed = segment0(segment0_b0, segment0_b1, segment0_b2, segment0_b3, segment0_b4, in_x, pulled0)
                if failed >= 0:  # a checked act must fail: its Python kernel raises the op's error
                    SEGMENT0.raise_failure(failed)
                # Notifies(sections [1, 0, 2]): each would finish one of the call's instances; none is made
                schedule = SCHEDULE0
                pending = layer.pending  # ReplayLayer.replay's bookkeeping, the same statements
                if pending and pending[-1][0] is schedule:
                    pending[-1][1] += 1
                else:
                    if len(pending) >= MAX_PENDING_RUNS:
                        layer.observe()
                    pending.append([schedule, 1])
                rt.deferred = True
                layer.known = (schedule.state, rt._seq, rt.launched)
                layer.last = schedule
                layer.replays += 1
                schedule.replays += 1
                runs += 1
                if rt.sink is not None:  # someone listens: the call's act events, built from its schedule
                    layer.emit_events(schedule, 'callgen')
            except BaseException:
                fail(deferring)  # as the general path: forget the state, cancel the call, deliver a Ctrl-C
                raise
            if deferring:  # call_guard.INTERRUPTS.leave(), inlined
                interrupts.depth -= 1
                if interrupts.depth == 0 and interrupts.pending is not None:
                    watch_buffer.clear()  # the call finished, but the interrupt is raised instead of returning
                    interrupts.deliver()
            watched = None
            if watch_buffer:
                watched = list(watch_buffer)
                watch_buffer.clear()
    if deferring is None:  # outside the lock: the general path takes it itself
        return general(args, kwargs)
    result = pulled0
    if watched:  # outside the lock: the handlers are the user's code
        dispatch(watched, result)
    return result
'''
