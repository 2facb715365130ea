"""The tiered kernel mode (issues 13 and 25): a session's first call runs the NumPy reference kernels, the later
calls Numba's, which a background thread makes meanwhile. The tests hold the background jobs (``held``) and run
them when they choose (before a call, between two calls, or never: the act that needs a kernel makes it), and the
tiers and bits must not care. tests/runtime/test_tiered_reproducible.py holds the reproducibility tests."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import Future

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels import tiered
from flowlab.kernels.tiered import TieredKernel

CALLS = 4
TOL = {"rtol": 2e-5, "atol": 1e-6}  # the kernel modes' agreement (tests/ops/test_kernel_nan_agreement.py)


class Held:
    """Background jobs kept in submission order (the Plan's task order) until the test runs them."""

    def __init__(self) -> None:
        self.jobs: list = []

    def submit(self, job) -> Future:
        self.jobs.append(job)
        return Future()

    def run(self, which=slice(None)) -> None:
        for job in self.jobs[which]:
            job()


@pytest.fixture
def held(monkeypatch) -> Held:
    monkeypatch.setenv("FLOWLAB_KERNELS", "tiered")
    jobs = Held()
    monkeypatch.setattr(tiered, "_submit", jobs.submit)
    return jobs


def define_train():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 12)), y: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, 16, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                              name="hidden")
        logits = flow.layers.dense(h, 5, kernel_initializer=flow.truncated_normal(0.1), name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return train


def batches(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(3)
    return [(rng.standard_normal((8, 12)).astype(np.float32), rng.integers(0, 5, 8).astype(np.int32))
            for _ in range(n)]


def tiered_kernels() -> list[TieredKernel]:
    rt = flow.default_session().runtime
    return [a.kernel.tiered for a in rt.actors.values() if a.kernel is not None and a.kernel.tiered is not None]


def run(mode: str, monkeypatch, calls: int = CALLS, between=None) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """``calls`` training calls in a fresh session; ``between(k)`` runs after call k."""
    flow.clear_default_session()
    if mode != "tiered":
        monkeypatch.setenv("FLOWLAB_KERNELS", mode)
    train = define_train()
    losses = []
    for k, (x, y) in enumerate(batches(calls)):
        losses.append(np.array(train(x, y)))
        if between is not None:
            between(k)
    variables = {name: a.copy() for name, a in flow.default_session().variable_arrays().items()}
    return losses, variables


def assert_close(got, want) -> None:
    for g, w in zip(got[0], want[0], strict=True):
        np.testing.assert_allclose(g, w, **TOL)
    assert got[1].keys() == want[1].keys()
    for name in want[1]:
        np.testing.assert_allclose(got[1][name], want[1][name], **TOL, err_msg=name)


@pytest.mark.parametrize("threads", ["0", "1"])
def test_numba_kernels_made_between_calls_change_no_tier(held, monkeypatch, threads) -> None:
    """The replay layer's path (FLOWLAB_THREADS=0) and run mode's actor threads (1): half the Numba kernels made
    after call 0, the rest after call 1; call 0 still runs the reference, calls 1 and after Numba (call 1 makes
    the kernels the background has not), and the run is the one whose kernels were all made at once."""
    monkeypatch.setenv("FLOWLAB_THREADS", threads)
    ran: list[set[str]] = []

    def switch_half_then_rest(k: int) -> None:
        ran.append({kernel.ran for kernel in tiered_kernels() if kernel.ran})
        if k == 0:
            held.run(slice(None, None, 2))
        elif k == 1:
            held.run(slice(1, None, 2))

    got = run("tiered", monkeypatch, between=switch_half_then_rest)
    assert ran == [{"reference"}] + [{"numba"}] * (CALLS - 1)
    assert all(kernel.settled for kernel in tiered_kernels())
    monkeypatch.setattr(tiered, "_submit", lambda job: job())
    at_once = run("tiered", monkeypatch)
    assert_equal(got, at_once)
    reference, numba = run("reference", monkeypatch), run("numba", monkeypatch)
    assert_close(got, reference)
    assert_close(got, numba)


def assert_equal(got, want) -> None:
    for g, w in zip(got[0], want[0], strict=True):
        np.testing.assert_array_equal(g, w)
    assert got[1].keys() == want[1].keys()
    for name in want[1]:
        np.testing.assert_array_equal(got[1][name], want[1][name], err_msg=name)


def define_predict():
    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((8, 12))) -> tp.Numpy:
        return flow.nn.softmax(flow.math.relu(x) * 1.3 + x)

    return predict


@pytest.mark.parametrize("threads", ["0", "1"])
def test_the_first_call_is_the_reference_mode_and_later_calls_the_numba_mode_bit_for_bit(held, monkeypatch,
                                                                                         threads) -> None:
    """A job without state: the tiered call 0 is the reference mode's bit for bit, every later call (replayed,
    fused past FUSE_AFTER calls, on run mode's actor threads with FLOWLAB_THREADS=1) the Numba mode's."""
    monkeypatch.setenv("FLOWLAB_THREADS", threads)
    x = batches(1)[0][0]

    def calls(mode: str) -> list[np.ndarray]:
        flow.clear_default_session()
        monkeypatch.setenv("FLOWLAB_KERNELS", mode)
        predict = define_predict()
        return [np.array(predict(x)) for _ in range(12)]

    got, reference, numba = calls("tiered"), calls("reference"), calls("numba")
    assert not np.array_equal(reference[0], numba[0])  # the tiers round differently: the test can tell them apart
    np.testing.assert_array_equal(got[0], reference[0])
    for k in range(1, 12):
        np.testing.assert_array_equal(got[k], numba[k], err_msg=f"call {k}")
    layer = flow.default_session().runtime.layer
    if threads == "0":  # the replay layer fused the later calls
        assert any(s.fused is not None for s in layer.schedules.values()), layer


def test_kernels_settle_in_the_second_call_and_fusion_follows(held) -> None:
    """No kernel is settled in call 0; the second call settles every kernel it runs (making the Numba kernels
    the background has not: here none), and the replayed schedule fuses Numba's kernels past FUSE_AFTER calls."""
    from flowlab.replay.fused import FUSE_AFTER

    train = define_train()
    data = batches(1)[0]
    train(*data)
    assert tiered_kernels() and not any(kernel.settled for kernel in tiered_kernels())
    assert all("reference, compiling" in repr(kernel) for kernel in tiered_kernels())
    train(*data)
    assert all(kernel.settled and kernel.ran == "numba" for kernel in tiered_kernels())
    for _ in range(FUSE_AFTER + 2):  # past the replay count that fuses
        train(*data)
    layer = flow.default_session().runtime.layer
    assert layer is not None and any(s.fused is not None for s in layer.schedules.values())
    assert {kernel.ran for kernel in tiered_kernels()} == {"numba"}


def test_the_act_record_says_which_tier_ran(held) -> None:
    train = define_train()
    x, y = batches(1)[0]
    session = flow.default_session()
    session.try_init()  # the runtime, to subscribe to before the first call
    rt = session.runtime
    events = []
    rt.hooks.append(events.append)  # a subscriber: the protocol runs the call act by act, recording each
    train(x, y)
    train(x, y)
    rt.hooks.remove(events.append)
    tiered_ids = {a.actor_id for a in rt.actors.values() if a.kernel is not None and a.kernel.tiered is not None}
    by_actor: dict[int, list[str | None]] = {}
    for event in events:
        by_actor.setdefault(event.actor_id, []).append(event.tier)
    assert tiered_ids and tiered_ids <= by_actor.keys()
    for actor_id, tiers in by_actor.items():
        if actor_id in tiered_ids:
            assert tiers == ["reference", "numba"], rt.actors[actor_id].name
        else:  # system actors, pushes and pulls: no op kernel, no tier
            assert set(tiers) == {rt.kernel_tiers.get(actor_id)}, rt.actors[actor_id].name
    assert "[numba]" in str(next(e for e in events if e.tier == "numba"))


def test_a_kernel_with_state_of_its_own_is_not_tiered(held) -> None:
    """dropout draws its masks from its own seeded stream: a switch would restart it, so it is Numba's only."""

    @flow.global_function(type="train")  # the identity in a predict job
    def drop(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        h = flow.layers.dense(x, 3, name="d")
        loss = flow.math.reduce_mean(flow.nn.dropout(h, rate=0.5, seed=7))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    drop(np.ones((4, 6), np.float32))
    rt = flow.default_session().runtime
    (actor,) = [a for a in rt.actors.values() if a.task.exec_sequence[0].op_type == "dropout"]
    assert actor.kernel is not None and actor.kernel.tiered is None
    assert rt.kernel_tiers[actor.actor_id] == "numba"


def test_a_kernel_numba_cannot_make_stays_on_the_reference(held, monkeypatch) -> None:
    from flowlab.kernels import registry

    make = registry.make_kernel

    def no_numba(op, ins, outs, impl=None, device="cpu", parallel=(0, 1)):
        if impl == "numba":
            raise KeyError(f"op {op.op_type!r} has no numba kernel")
        return make(op, ins, outs, impl, device, parallel)

    monkeypatch.setattr(registry, "make_kernel", no_numba)
    train = define_train()
    data = batches(1)[0]
    train(*data)
    with pytest.raises(KeyError):
        held.run(slice(0, 1))
    train(*data)  # later calls run, that task on its reference kernel for good
    kernel = tiered_kernels()[0]
    assert kernel.settled and kernel.numba is None and isinstance(kernel.error, KeyError)
    assert "reference" in repr(kernel) and "compiling" not in repr(kernel)


def test_the_first_call_imports_no_numba_on_the_calling_thread() -> None:
    """The warm start's ~1 s of loading Numba happens off the first call's thread (kernels/tiered.py)."""
    code = ("import sys, threading, numpy as np, flowlab as flow, flowlab.typing as tp\n"
            "seen = []\n"
            "sys.addaudithook(lambda ev, args: seen.append(args[0]) if ev == 'import' and args[0] == 'numba' and "
            "threading.current_thread() is threading.main_thread() else None)\n"
            "@flow.global_function()\n"
            "def f(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:\n    return flow.math.relu(x) * 2.0\n"
            "print(f(-np.arange(6, dtype=np.float32).reshape(2, 3) + 2.0).tolist())\nprint(seen)\n")
    env = {k: v for k, v in os.environ.items() if k != "FLOWLAB_KERNELS"}  # the default mode
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    result, seen = out.stdout.strip().splitlines()[-2:]
    assert result == "[[4.0, 2.0, 0.0], [0.0, 0.0, 0.0]]"
    assert seen == "[]", "the first call imported Numba on its own thread"


def test_the_debugger_records_the_tier_of_each_act(held) -> None:
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    x = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
    dbg = flow.debug(pad_Job, x)
    dbg.continue_()
    pad = next(a for a in dbg.recording().acts if a["actor"] == "reflection_pad2d_0")
    assert pad["tier"] == "reference"  # its Numba kernel is held: the reference ran the act
    (event,) = [e.event for e in dbg.timeline() if e.event.actor_name == "reflection_pad2d_0"]
    assert event.tier == "reference" and "[reference]" in str(event)


def test_flow_debug_runs_the_tier_of_the_sessions_next_call(held) -> None:
    """Before any call the debugger's run is the first call (the reference tier); after one, a later call's
    (Numba's), so it shows the numbers the session's next call would give."""

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    x = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
    tiers = []
    for _ in range(2):
        dbg = flow.debug(pad_Job, x)
        dbg.continue_()
        tiers.append(next(a for a in dbg.recording().acts if a["actor"] == "reflection_pad2d_0")["tier"])
        pad_Job(x)
    assert tiers == ["reference", "numba"]


def test_the_background_work_waits_for_a_second_call(monkeypatch) -> None:
    """Loading Numba holds the GIL: it starts when a second call begins (or START_AFTER seconds after the first
    kernel was tiered), so the first call runs alone, and a one-call script exits without waiting for Numba."""
    from flowlab.session import Session

    monkeypatch.setenv("FLOWLAB_KERNELS", "tiered")
    monkeypatch.setattr(tiered, "_released", False)
    monkeypatch.setattr(tiered, "_held", [])
    monkeypatch.setattr(tiered, "START_AFTER", 60.0)
    started: list = []
    monkeypatch.setattr(tiered, "_start", started.append)
    run_jobs, after_runs = Session._run_jobs, []

    def counting(self, *args, **kwargs):
        after_runs.append(len(started))
        run_jobs(self, *args, **kwargs)

    monkeypatch.setattr(Session, "_run_jobs", counting)
    train = define_train()
    train(*batches(1)[0])
    assert len(after_runs) >= 2 and set(after_runs) == {0}  # model init and the first call: every job held
    assert started == [] and len(tiered._held) == len(tiered_kernels()) > 0
    after_runs.clear()
    train(*batches(1)[0])
    assert after_runs == [len(tiered_kernels())] and tiered._held == []  # all started as the second call began
    train(*batches(1)[0])
    assert len(started) == len(tiered_kernels())  # once


def test_the_held_jobs_start_after_start_after_seconds_without_a_call(monkeypatch) -> None:
    monkeypatch.setattr(tiered, "_released", False)
    monkeypatch.setattr(tiered, "_held", [])
    monkeypatch.setattr(tiered, "START_AFTER", 0.05)
    started = threading.Event()
    monkeypatch.setattr(tiered, "_start", lambda job: started.set())
    tiered._submit(lambda: None)
    assert not started.is_set()
    assert started.wait(10)


def test_only_the_plans_kernels_are_compiled(tmp_path) -> None:
    """With an empty cache, the background thread compiles the Numba kernels of the Plan's tasks and nothing else
    (a guard: importing every kernel module must not compile any)."""
    code = ("import numpy as np, flowlab as flow, flowlab.typing as tp\n"
            "from flowlab.kernels.tiered import wait_tiers\n"
            "@flow.global_function()\n"
            "def f(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:\n    return flow.math.relu(x)\n"
            "f(np.ones((2, 3), np.float32))\nwait_tiers()\n"
            "import sys, numba\n"
            "compiled = sorted(f'{m.__name__}.{k}' for m in list(sys.modules.values())\n"
            "                  if getattr(m, '__name__', '').startswith('flowlab.kernels.numba_cpu.')\n"
            "                  for k, v in vars(m).items() if isinstance(v, numba.core.dispatcher.Dispatcher)"
            " and v.signatures)\n"
            "print(compiled)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("FLOWLAB_KERNELS", "NUMBA_CACHE_DIR")}
    env["FLOWLAB_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    compiled = out.stdout.strip().splitlines()[-1]
    assert compiled == "['flowlab.kernels.numba_cpu.math._relu']", compiled


def test_a_closed_sessions_pending_numba_compiles_are_dropped(held, monkeypatch) -> None:
    """A cleared session (its runtime closed) never runs again: its kernels' background jobs that had not begun
    make nothing (they would call the kernel factories as they are then, a test's patched ones included)."""
    from flowlab.kernels import registry

    train = define_train()
    train(*batches(1)[0])
    assert held.jobs
    flow.clear_default_session()
    made = []
    factory_of = registry.get_kernel_factory

    def counting(op_type, impl=None, device="cpu"):
        made.append(op_type)
        return factory_of(op_type, impl, device)

    monkeypatch.setattr(registry, "get_kernel_factory", counting)
    held.run()
    assert made == []
