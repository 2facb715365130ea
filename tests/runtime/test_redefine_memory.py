"""Re-defining a job in the default mode (tiered kernels, background fusion) keeps nothing of the cleared session
alive (issue 25): a notebook user re-running a training cell 200 times grew 42 -> 194 MiB. The cause was the
background threads' queues: when the tier or fusion thread fell behind (a loaded machine, a cold Numba cache),
each cleared session's queued Numba builds stayed queued, ran for kernels nobody would call again, and a queued
segment compile held its whole runtime (actors, arenas). Now a queued tier build of a collected kernel is
skipped, as is a queued segment compile of a collected segment (both hold what they build for weakly)."""

from __future__ import annotations

import gc
import os
import threading
import weakref

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels import registry, tiered
from flowlab.replay import fused


@pytest.fixture
def default_mode(monkeypatch):
    """What a user runs: tiered kernels, segments compiled in the background (the conftest pins Numba and
    foreground fusion for the rest of the suite)."""
    monkeypatch.delenv("FLOWLAB_KERNELS", raising=False)
    monkeypatch.delenv("FLOWLAB_FUSE_BACKGROUND", raising=False)
    yield
    tiered.wait_tiers(300)
    fused.wait_compiled(300)


def define(batch: int = 16, features: int = 20):
    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((batch, features)),
                  y: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, 8, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                              name="hidden")
        logits = flow.layers.dense(h, 4, kernel_initializer=flow.truncated_normal(0.1), name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    x = rng.random((batch, features), dtype=np.float32)
    y = rng.integers(0, 4, batch).astype(np.int32)
    return lambda: train_job(x, y)


def hold(submit) -> threading.Event:
    """Park a background thread on a gate (a job that waits), so that what is submitted next queues behind it,
    as it does when the thread falls behind. Set the returned event to let it go."""
    gate = threading.Event()
    submit(lambda: gate.wait(120))
    return gate


def test_a_cleared_sessions_queued_tier_builds_do_not_run(default_mode, monkeypatch):
    built: list[str] = []
    real = registry.make_kernel

    def counting(op, in_descs, out_descs, impl=None, *args, **kwargs):
        if impl == "numba":
            built.append(op.name)
        return real(op, in_descs, out_descs, impl, *args, **kwargs)

    monkeypatch.setattr(registry, "make_kernel", counting)
    tiered.release()
    gate = hold(tiered._start)
    try:
        call = define()
        call()
        kernels = [a.kernel.tiered for a in flow.default_session().runtime.actors.values()
                   if a.kernel is not None and a.kernel.tiered is not None]
        assert kernels and not any(k.settled for k in kernels)  # their Numba builds wait behind the gate
        del kernels, call
        flow.clear_default_session()
        gc.collect()
    finally:
        gate.set()
    tiered.wait_tiers(120)
    assert built == [], f"the cleared session's tier builds ran: {sorted(set(built))}"


def test_a_queued_segment_compile_does_not_keep_the_cleared_runtime(default_mode):
    call = define()
    call()
    call()
    tiered.wait_tiers(300)  # every kernel on Numba: the schedules fuse after FUSE_AFTER replays
    gate = hold(fused._submit)
    try:
        for _ in range(fused.FUSE_AFTER + 4):
            call()
        assert len(fused._pending) > 1  # the gate and at least one segment compile behind it
        runtime = weakref.ref(flow.default_session().runtime)
        session = weakref.ref(flow.default_session())
        del call
        flow.clear_default_session()
        gc.collect()
        assert session() is None
        assert runtime() is None, "a queued segment compile keeps the cleared session's runtime (and its arenas)"
    finally:
        gate.set()
    fused.wait_compiled(300)


def test_the_old_session_is_collected_after_clearing_in_the_default_mode(default_mode):
    call = define()
    for _ in range(12):
        call()
    old = weakref.ref(flow.default_session())
    del call
    flow.clear_default_session()
    gc.collect()
    assert old() is None


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.long
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc")
def test_soak_200_redefinitions_keep_memory_flat(default_mode):
    """200 x (clear the session, define the MLP train job, 12 calls): RSS grows less than 0.05 MiB a cycle over
    the second half (it grew ~0.7 MiB a cycle)."""
    rss = []
    for _ in range(200):
        flow.clear_default_session()
        call = define(100, 784)
        for _ in range(12):
            call()
        del call
        rss.append(rss_mib())
    half = np.array(rss[100:])
    slope = float(np.polyfit(np.arange(half.size), half, 1)[0])
    print(f"RSS start {rss[0]:.1f} MiB, cycle 100 {rss[100]:.1f} MiB, end {rss[-1]:.1f} MiB, "
          f"second-half slope {slope:.4f} MiB/cycle")
    assert slope < 0.05, (rss[0], rss[100], rss[-1], slope)
