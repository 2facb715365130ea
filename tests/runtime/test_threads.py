"""Parallel run mode (flowlab/runtime/threads.py): one OS thread per Plan thread id, the same results as stepping.

Every comparison is bit for bit against the stepped protocol (FLOWLAB_THREADS=0, FLOWLAB_REPLAY=0: one act at a
time on the caller's thread), over several train steps: returned arrays, watched values and every variable. The
two-tower job puts a dense layer on device 1 (``placement("cpu", "0:1")``), so its Plan has two compute threads
and runs in parallel by default; the others are one-device Plans run with threads forced on.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import KernelError
from flowlab.replay.state import differences, protocol_state
from flowlab.runtime import ActEvent, JobInstance, Runtime
from flowlab.runtime.threads import compute_threads, wants_parallel
from tests.helpers.replay_models import MODELS

B, D, H, C = 16, 12, 8, 3
CALLS = 6


def build_towers(watched: list[np.ndarray]) -> Callable[[int], list[np.ndarray]]:
    """A train job whose two hidden towers compute on two CPU devices (Plan threads 0 and 1), and an eval job."""
    flow.config.cpu_device_num(2)
    init = flow.truncated_normal(0.1)

    def net(x: Any) -> Any:
        with flow.scope.placement("cpu", "0:0"):
            a = flow.layers.dense(x, H, activation=flow.nn.relu, kernel_initializer=init, name="tower0")
        with flow.scope.placement("cpu", "0:1"):
            b = flow.layers.dense(x, H, activation=flow.nn.tanh, kernel_initializer=init, name="tower1")
        with flow.scope.placement("cpu", "0:0"):
            return flow.layers.dense(a + b, C, kernel_initializer=init, name="head")

    @flow.global_function(type="train")
    def tower_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        logits = net(x)
        flow.watch_diff(logits, watched.append)
        with flow.scope.placement("cpu", "0:0"):
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([3], [0.1, 0.05]), momentum=0.9).minimize(loss)
        return loss

    @flow.global_function()
    def tower_eval(x: tp.Numpy.Placeholder((B, D))) -> tp.Numpy:
        return flow.math.argmax(net(x))

    def call(k: int) -> list[np.ndarray]:
        x, y = batch(k)
        return [tower_job(x, y), tower_eval(x)]

    call.train = tower_job  # type: ignore[attr-defined]
    return call


def batch(k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(k)
    return rng.standard_normal((B, D)).astype(np.float32), rng.integers(0, C, B).astype(np.int32)


def variables_of(rt: Runtime) -> dict[str, np.ndarray]:
    """The variables' live arrays in a runtime's memory blocks (as Session.variable_arrays finds them)."""
    out = {}
    for task in rt.plan.tasks:
        op = task.exec_sequence[0]
        if op.op_type == "variable":
            out[op.name] = rt.regsts[task.produced_regst_desc["out"].regst_desc_id][0].blobs[op.output_lbns[0]]
    return out


def run(build: Callable[[list[np.ndarray]], Callable[[int], list[np.ndarray]]], threads: str,
        monkeypatch: pytest.MonkeyPatch, calls: int = CALLS) -> dict[str, Any]:
    monkeypatch.setenv("FLOWLAB_THREADS", threads)
    monkeypatch.setenv("FLOWLAB_REPLAY", "0")  # the stepped side is the protocol alone; a parallel runtime has none
    flow.clear_default_session()
    watched: list[np.ndarray] = []
    call = build(watched)
    outputs = [call(k) for k in range(calls)]
    rt = flow.default_session().runtime
    names = sorted(t.name for t in flowlab_threads())
    active = rt.threads is not None and rt.threads.active
    rt.stop_threads()  # back to one scheduler, kernels their own: the protocol state compares with the stepped one
    return {"outputs": outputs, "watched": watched, "variables": flow.get_all_variables(), "rt": rt,
            "state": protocol_state(rt), "threads": names, "active": active}


def bits(a: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    a = np.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def assert_same(stepped: dict[str, Any], parallel: dict[str, Any]) -> None:
    for k, (a, b) in enumerate(zip(stepped["outputs"], parallel["outputs"], strict=True)):
        assert [bits(x) for x in a] == [bits(x) for x in b], f"call {k} returned other values"
    assert len(stepped["watched"]) == len(parallel["watched"])
    for k, (a, b) in enumerate(zip(stepped["watched"], parallel["watched"])):
        assert bits(a) == bits(b), f"watched value {k} differs"
    assert stepped["variables"].keys() == parallel["variables"].keys() and stepped["variables"]
    for name, value in stepped["variables"].items():
        assert bits(value) == bits(parallel["variables"][name]), f"variable {name} differs"


def flowlab_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("flowlab-thrd-")]


# -- choosing by Plan --------------------------------------------------------------------------------
def test_threads_are_chosen_by_plan_and_forced_by_the_env(monkeypatch):
    monkeypatch.delenv("FLOWLAB_THREADS", raising=False)
    build_towers([])(0)
    plan = flow.default_session().plan
    assert compute_threads(plan) == {(0, 0), (0, 1)}
    assert wants_parallel(plan) and flow.default_session().runtime.threads is not None
    layer = flow.default_session().runtime.layer  # a parallel runtime's calls are replayed in lanes (lanes.py)
    assert layer is not None and all(s.lanes is not None for s in layer.schedules.values() if "tower_job" in s.key)
    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    assert not wants_parallel(plan)

    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    MODELS["mlp_adam"]([])(0)
    plan = flow.default_session().plan
    assert compute_threads(plan) == {(0, 0)}  # one busy compute thread: threads would only add hand-offs
    monkeypatch.delenv("FLOWLAB_THREADS")
    assert not wants_parallel(plan)
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    assert wants_parallel(plan)
    monkeypatch.setenv("FLOWLAB_THREADS", "maybe")
    with pytest.raises(ValueError, match="FLOWLAB_THREADS='maybe': expected 1"):
        wants_parallel(plan)


# -- the same results ----------------------------------------------------------------------------------
def test_two_compute_threads_in_parallel_train_as_stepped_bit_for_bit(monkeypatch):
    stepped = run(build_towers, "0", monkeypatch)
    parallel = run(build_towers, "", monkeypatch)  # chosen by the Plan
    assert stepped["rt"].threads is None and parallel["rt"].threads is not None
    assert stepped["threads"] == [] and {"flowlab-thrd-0:0", "flowlab-thrd-0:1"} <= set(parallel["threads"])
    assert_same(stepped, parallel)
    assert len(parallel["watched"]) == CALLS
    # Every actor's counters, every register's place and every memory block's bytes agree too, but for how often
    # the ReentrantLock acted (it takes every request present at once, so that is timing's) and so the act count.
    lock = next(a for a in parallel["rt"].actors.values() if a.task.task_type == "ReentrantLock")
    timing = ["['runtime']['threads']", "['runtime']['_seq']", f"['{lock.name}#",
              *(f"['regsts'][({i}, " for i in lock.writable)]
    diffs = [d for d in differences(stepped["state"], parallel["state"]) if not any(t in d for t in timing)]
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("model", ["mlp_sgd_momentum", "mlp_adam", "batchnorm", "watch_dropout"])
def test_one_device_models_with_threads_forced_train_as_stepped_bit_for_bit(model, monkeypatch):
    stepped = run(MODELS[model], "0", monkeypatch)
    parallel = run(MODELS[model], "1", monkeypatch)
    assert parallel["active"] and stepped["rt"].threads is None
    assert_same(stepped, parallel)


def test_seed_programs_with_threads_forced_match_numpy(monkeypatch):
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    monkeypatch.setenv("FLOWLAB_REPLAY", "0")  # the protocol's parallel mode (a replay would run these serially)
    x = np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32)

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    @flow.global_function()
    def zero_pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.zero_pad2d(x, padding=2)

    for _ in range(3):
        np.testing.assert_array_equal(pad_Job(x), np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
        np.testing.assert_array_equal(zero_pad_Job(x), np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2))))
    assert flow.default_session().runtime.threads.active


# -- stepping stays deterministic ------------------------------------------------------------------------
def launch_tower_call(rt: Runtime, k: int, out: list[np.ndarray]) -> None:
    x, y = batch(k)
    for name, array in (("System-Push-Input_0", x), ("System-Push-Input_1", y)):
        rt.launch(JobInstance(name, push_array=array))
    rt.launch(JobInstance("tower_job"))
    rt.launch(JobInstance("System-Pull-Return_0", on_pull=out.append))


def test_stepping_one_chosen_thread_at_a_time_gives_the_parallel_results(monkeypatch):
    """Drive the runtime by ``step(thread=...)``, always the highest-numbered thread that can act: another act
    order than ``step()``'s, and the same values as a parallel run."""
    parallel = run(build_towers, "", monkeypatch, calls=3)
    plan = flow.default_session().plan
    rt = Runtime(plan)
    assert rt.threads is not None
    keys = sorted(rt.thread_keys, reverse=True)
    rt.launch(JobInstance("System-ModelInit"))
    losses: list[np.ndarray] = []
    orders = []
    for k in range(-1, 3):
        if k >= 0:
            rt.tier_phase.numba = k >= 1  # as the session's calls: its first on the reference tier (kernels/tiered.py)
            launch_tower_call(rt, k, losses)
        order = []
        while True:
            key = next((key for key in keys if rt.peek(thread=key) is not None), None)
            if key is None:
                break
            event = rt.step(thread=key)
            assert isinstance(event, ActEvent)
            task = rt.actors[event.actor_id].task
            assert (task.machine_id, task.thrd_id) == key  # the act is the chosen thread's
            order.append(event.actor_name)
        orders.append(order)
        if k >= 0:
            assert bits(losses[k]) == bits(parallel["outputs"][k][0]), f"call {k}"
    assert len(set(map(tuple, orders[1:]))) == 1 and orders[1] != order_of_step(plan)
    variables = variables_of(rt)
    assert variables.keys() == parallel["variables"].keys()
    for name, value in parallel["variables"].items():  # the weights after the three steps, bit for bit
        assert bits(variables[name]) == bits(value), name
    assert rt.step(thread=0) is None and rt.peek() is None
    with pytest.raises(ValueError, match=r"no thread \(0, 99\).*its threads are \[\(0, 0\), \(0, 1\)"):
        rt.step(thread=(0, 99))
    rt.close()


def order_of_step(plan: Any) -> list[str]:
    """The act order of one tower_job call (after init) by plain ``step()``."""
    rt = Runtime(plan)
    rt.launch(JobInstance("System-ModelInit"))
    while rt.step() is not None:
        pass
    launch_tower_call(rt, 0, [])
    order = []
    while (event := rt.step()) is not None:
        order.append(event.actor_name)
    rt.close()
    return order


# -- faults ----------------------------------------------------------------------------------------------
def test_a_kernel_error_on_a_worker_thread_reaches_the_caller_and_no_thread_is_left(monkeypatch):
    monkeypatch.setenv("FLOWLAB_REPLAY", "0")  # the protocol's threads (lanes: tests/replay/test_lanes_replay.py)
    before = set(threading.enumerate())
    call = build_towers([])
    monkeypatch.setenv("FLOWLAB_THREADS", "")
    call(0)
    assert flowlab_threads() and all(loop.sleeping for loop in flow.default_session().runtime.threads.loop_list)
    bad = np.full((B,), C + 5, np.int32)  # out of range: the cross entropy's label check raises on thread 0
    with pytest.raises(KernelError, match=r"sparse_softmax_cross_entropy"):
        call.train(np.zeros((B, D), np.float32), bad)
    assert not flowlab_threads(), "a failed call stopped and joined its threads"
    call(1)  # the session goes on (a fresh runtime over the same memory blocks), in parallel again
    assert flowlab_threads()
    flow.clear_default_session()
    assert set(threading.enumerate()) == before


def test_sigint_during_a_parallel_call_is_delivered_after_it_and_the_session_goes_on(monkeypatch):
    monkeypatch.setenv("FLOWLAB_REPLAY", "0")  # the protocol's threads (lanes: tests/replay/test_lanes_replay.py)
    call = build_towers([])
    call(0)
    fired: list[str] = []
    rt = flow.default_session().runtime
    rt.stop_threads()  # parked loops; the next call starts them again, with the kernel below unlocked
    actor = next(a for a in rt.actors.values() if a.task.thrd_id == 1 and a.kernel is not None)
    inner = actor.kernel

    def kernel(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
        if not fired:
            fired.append(threading.current_thread().name)
            os.kill(os.getpid(), signal.SIGINT)
        inner(ins, outs)

    # not a hook: a runtime with subscribers steps; a kernel on device 1's thread sends it
    actor.kernel = inner.wrap(kernel)
    with pytest.raises(KeyboardInterrupt):
        call(1)
    assert fired == ["flowlab-thrd-0:1"]  # raised on device 1's thread, delivered to the caller after the call
    assert flowlab_threads()  # the call completed: its loops are parked for the next
    call(2)


def test_failure_semantics_hold_with_threads_forced_on():
    """tests/test_failure_semantics*.py (the replay-independent ones) with FLOWLAB_THREADS=1, in a fresh
    interpreter: a signal handler and the default session are process-wide."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, FLOWLAB_THREADS="1", PYTHONPATH=str(root))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/runtime/test_failure_semantics.py",
         "tests/runtime/test_failure_semantics_concurrency.py"], cwd=root, env=env, capture_output=True, text=True,
        timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


# -- two threads compute at once -------------------------------------------------------------------------
def test_two_jobs_on_two_devices_compute_at_the_same_time(monkeypatch):
    """Two jobs launched together whose critical sections are disjoint, each with its compute on a Plan thread of
    its own: in parallel run mode their kernels run at once (each meets the other's flag: tests/runtime/test_nogil.py's
    handshake, inside the actors' kernels); stepped, the first spins out alone. A synthetic Plan puts each job's
    compute tasks on threads 50 and 51 (a compiled Plan may put both jobs' tasks on one device thread: OneFlow
    assigns CPU compute tasks round-robin, and a spinning kernel holds its thread)."""
    from tests.helpers.nogil import SPIN_LIMIT, _meet

    flow.config.cpu_device_num(2)

    def body(device: int) -> Any:
        with flow.scope.placement("cpu", f"0:{device}"):
            v = flow.get_variable(f"v{device}", shape=(4,), initializer=flow.constant_initializer(device + 1.0))
            return flow.math.relu(v * 2.0)

    @flow.global_function()
    def job0() -> tp.Numpy:
        return body(0)

    @flow.global_function()
    def job1() -> tp.Numpy:
        return body(1)

    job0()
    compiled = flow.default_session().plan
    flow.clear_default_session()
    plan = dataclasses.replace(compiled, tasks=tuple(
        dataclasses.replace(t, thrd_id=50 + t.job_id) if t.job_id in (0, 1) and t.task_type == "NormalForward"
        else t for t in compiled.tasks))
    names: list[str] = []  # the OS threads of the two scalar_mul actors' Plan threads

    def run_both(threads: str, limit: int) -> dict[int, tuple[bool, str]]:
        monkeypatch.setenv("FLOWLAB_THREADS", threads)
        rt = Runtime(plan)
        flags = np.zeros(4, np.int64)
        met: dict[int, tuple[bool, str]] = {}
        names.clear()
        for me in (0, 1):  # before the first call: parallel mode unlocks the kernels it finds
            actor = next(a for a in rt.actors.values()
                         if a.task.job_id == me and a.task.exec_sequence[0].op_type == "scalar_mul")
            names.append(f"flowlab-thrd-{actor.task.machine_id}:{actor.task.thrd_id}")

            def kernel(ins: list[np.ndarray], outs: list[np.ndarray], me: int = me, inner: Any = actor.kernel) -> None:
                met[me] = (bool(_meet(flags, me, 1 - me, limit)), threading.current_thread().name)
                inner(ins, outs)

            actor.kernel = actor.kernel.wrap(kernel)
        try:
            rt.run_protocol([JobInstance("System-ModelInit")])
            pulls = [JobInstance("System-Pull-Return_0"), JobInstance("System-Pull-Return_1")]  # either ends first
            rt.run_protocol([JobInstance("job0"), JobInstance("job1"), *pulls])
        finally:
            rt.close()  # its threads, even when the test fails
        np.testing.assert_array_equal(pulls[0].pulled, np.full(4, 2.0, np.float32))
        np.testing.assert_array_equal(pulls[1].pulled, np.full(4, 4.0, np.float32))
        return met

    met = run_both("", SPIN_LIMIT)
    assert names == ["flowlab-thrd-0:50", "flowlab-thrd-0:51"]
    assert met == {0: (True, names[0]), 1: (True, names[1])}
    stepped = run_both("0", 1_000_000)
    assert sorted(seen for seen, _ in stepped.values()) == [False, True]  # one kernel at a time: no meeting
    assert not flowlab_threads()


def test_the_debugger_steps_one_chosen_thread(monkeypatch):
    monkeypatch.setenv("FLOWLAB_THREADS", "")
    call = build_towers([])
    call(0)
    x, y = batch(1)
    dbg = flow.debug(call.train, x, y)
    with pytest.raises(flow.errors.FlowlabError, match=r"no actor of thread 1 can act now; next_actor\(\)"):
        dbg.step(thread=1)  # the run starts on the main job's thread
    on_one = []
    while not dbg.finished:
        name = dbg.next_actor(thread=1)
        event = dbg.step(thread=1) if name is not None else dbg.step()
        if name is not None:
            assert name.endswith("/" + event.actor_name)
            on_one.append(dbg.runtime.actors[event.actor_id])
    assert any(a.name.startswith("tower1-") for a in on_one)
    assert {a.task.thrd_id for a in on_one} == {1}
    assert bits(dbg.result) == bits(call.train(x, y))  # the debugger ran on copies: the session's call agrees


def test_a_failure_outside_any_act_on_a_worker_thread_is_raised_not_waited_for(monkeypatch):
    """Not a kernel's: the loop's own code raising (here an entry of a thread's ready queue whose readiness check
    raises). The caller gets it at once, instead of waiting for a thread that is gone, and no thread is left."""

    class Broken:
        queued = True
        name = "broken"

        def is_ready(self) -> bool:
            raise ZeroDivisionError("a bug")

    monkeypatch.setenv("FLOWLAB_REPLAY", "0")  # the protocol's threads, not a replay's lanes
    call = build_towers([])
    call(0)
    loop = flow.default_session().runtime.threads.loop_list[0]
    loop.ready.append(Broken())  # type: ignore[arg-type]
    expected = rf"ThreadLoop machine {loop.key[0]} thread {loop.key[1]}\b.* stopped: ZeroDivisionError: a bug"
    with pytest.raises(RuntimeError, match=expected):
        call(1)
    assert not flowlab_threads()
    call(2)  # the session was cancelled and goes on


def test_a_replay_layer_attached_by_hand_captures_one_order_and_replays_the_same_values(monkeypatch):
    """A replay executor put over a parallel runtime after a call that ran in parallel makes the protocol run
    stepped (a capture records one act order), its replays run in lanes, and the values stay the stepped ones."""
    from flowlab.replay.executor import ReplayExecutor

    stepped = run(build_towers, "0", monkeypatch)
    monkeypatch.setenv("FLOWLAB_THREADS", "")
    flow.clear_default_session()
    call = build_towers([])
    outputs = [call(0)]
    session = flow.default_session()
    rt = session.runtime
    assert rt.threads.active and rt.layer is None
    session.executor = ReplayExecutor(rt)
    layer = session.executor.layer
    outputs += [call(k) for k in range(1, CALLS)]
    assert not rt.threads.active and layer.replays > 0
    for k, (a, b) in enumerate(zip(stepped["outputs"], outputs, strict=True)):
        assert [bits(x) for x in a] == [bits(x) for x in b], f"call {k}"
