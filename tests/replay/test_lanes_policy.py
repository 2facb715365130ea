"""Lanes or one thread (runtime/policy.py ``_lanes_decision``, ``lanes_verdict``; replay/lanes.py ``Trial``): the
execution policy never runs a multi-device Plan's replays on OS-thread lanes where they lose to one thread.

Before any call it declines lanes on what is known (one core available, BLAS calls that already take every core);
otherwise, once the lanes are fused and compiled, replays time them against the same programs merged on one thread,
alternating, and the first trial to finish decides for the session. ``print(session.execution)`` says which and
why. Either way the results are the protocol's bits: the tests compare losses and variables with forced lanes and
forced one thread."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.replay import lanes as lanes_mod
from flowlab.runtime import policy as policy_mod
from flowlab.runtime.policy import TRIAL_PAIRS, lanes_verdict

B = 12
CALLS = 34  # two schedules (the boxing registers rotate) each past fusion (8 replays), then the trial (3 + 3)


@pytest.fixture(autouse=True)
def _auto_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLOWLAB_THREADS", raising=False)
    monkeypatch.setattr(policy_mod, "available_cores", lambda: 2)  # the facts of a 2-core box with one BLAS thread
    monkeypatch.setattr(policy_mod, "blas_threads", lambda: 1)


def train_job(devices: int = 2) -> Any:
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def dp_job(x: tp.Numpy.Placeholder((B, 6)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            init = flow.truncated_normal(0.1)
            h = flow.layers.dense(x, 8, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
            logits = flow.layers.dense(h, 3, kernel_initializer=init, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return dp_job


def run(calls: int = CALLS, devices: int = 2) -> dict[str, Any]:
    """A fresh session's losses and final variables over ``calls`` steps, and what ran them."""
    job = train_job(devices)
    rng = np.random.default_rng(3)
    losses = [job(rng.standard_normal((B, 6)).astype(np.float32), rng.integers(0, 3, B).astype(np.int32))
              for _ in range(calls)]
    session = flow.default_session()
    layer = session.runtime.layer
    return {"losses": losses, "variables": {k: v.copy() for k, v in flow.get_all_variables().items()},
            "policy": session.execution, "lanes": [s.lanes for s in layer.schedules.values() if s.replays],
            "threads": session.runtime.threads, "generated": dict(session.generated_calls)}


def same_bits(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert len(a["losses"]) == len(b["losses"])
    for x, y in zip(a["losses"], b["losses"]):
        assert np.array_equal(x, y)
    assert a["variables"].keys() == b["variables"].keys()
    for name in a["variables"]:
        assert np.array_equal(a["variables"][name], b["variables"][name]), name


def lanes_line(policy: Any) -> str:
    return next(line.strip() for line in str(policy).splitlines() if line.split()[1:2] == ["lanes"])


TIMED: list[tuple[str, bool]] = []  # what the trial ran: (the way, whether the lanes were fused)


def slow_lanes(seconds_serial: float, seconds_lanes: float):
    """A stand-in for the trial's clock: it still runs each replay, and reports the given seconds for it."""
    TIMED.clear()

    def timed(run: Any, serial: bool) -> float:
        TIMED.append((run.__name__, bool(run.__self__.segment_starts)))
        run()
        return seconds_serial if serial else seconds_lanes
    return staticmethod(timed)


def test_verdict_keeps_lanes_only_when_they_win_by_the_margin() -> None:
    won, why = lanes_verdict([3e-3, 3.2e-3, 9e-3], [1e-3, 2e-3, 8e-3])  # medians 3.2 vs 2.0 ms
    assert won and "2 ms a call on lanes vs 3.2 ms on one thread" in why
    assert not lanes_verdict([3e-3] * 3, [2.8e-3] * 3)[0]  # 0.93 of one thread's: not worth a second core
    assert not lanes_verdict([3e-3] * 3, [6e-3] * 3)[0]
    assert lanes_verdict([3e-3] * 3, [2.7e-3] * 3)[0]  # exactly the margin


def test_one_core_declines_lanes_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy_mod, "available_cores", lambda: 1)
    alone = run()
    policy = alone["policy"]
    assert not policy.lanes and not policy.parallel and policy.executor == "callgen"
    assert "this process may run on 1 core" in lanes_line(policy)
    assert alone["threads"] is None and all(lanes is None for lanes in alone["lanes"])
    monkeypatch.setenv("FLOWLAB_THREADS", "1")  # forced lanes: the same bits
    forced = run()
    assert forced["policy"].lanes and all(lanes is not None for lanes in forced["lanes"])
    same_bits(alone, forced)


def test_blas_threads_on_every_core_decline_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy_mod, "blas_threads", lambda: 2)
    policy = run(2)["policy"]
    assert not policy.lanes and "each BLAS call already runs 2 threads on the 2 cores" in lanes_line(policy)


@pytest.mark.parametrize("devices", [2, 3])
def test_lanes_that_lose_the_trial_give_way_to_one_thread(devices: int, monkeypatch: pytest.MonkeyPatch,
                                                          fuse_in_call: None) -> None:
    monkeypatch.setattr(lanes_mod.Trial, "timed", slow_lanes(1e-3, 1.5e-3))
    lost = run(devices=devices)
    policy = lost["policy"]
    assert policy.lanes_trial and not policy.lanes and policy.executor == "callgen"
    line = lanes_line(policy)
    assert line.startswith("no  lanes") and "replays time lanes against one thread" in line
    assert f"1.5 ms a call on lanes vs 1 ms on one thread (medians of {TRIAL_PAIRS} and {TRIAL_PAIRS} replays, " \
        "fused)" in line
    assert lost["threads"] is None and all(lanes is None for lanes in lost["lanes"])  # the lane threads ended
    # timed once fused: the same segments on lanes and merged on the caller's thread, alternating
    assert TIMED == [("run_merged", True), ("run", True)] * TRIAL_PAIRS
    assert "dp_job" in lost["generated"]  # and the calls went on to a generated call, as on one thread
    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    serial = run(devices=devices)
    same_bits(lost, serial)  # three of its calls ran the lanes' programs merged on one thread


def test_lanes_that_win_the_trial_stay(monkeypatch: pytest.MonkeyPatch, fuse_in_call: None) -> None:
    monkeypatch.setattr(lanes_mod.Trial, "timed", slow_lanes(2e-3, 1e-3))
    won = run()
    policy = won["policy"]
    assert policy.lanes and policy.executor == "lanes"
    assert lanes_line(policy).startswith("yes lanes") and "1 ms a call on lanes vs 2 ms" in lanes_line(policy)
    kept = [lanes for lanes in won["lanes"] if lanes is not None]
    assert kept and all(lanes.trial is None for lanes in kept) and won["threads"] is not None
    assert any(lanes.segment_starts for lanes in kept)  # fused on their lanes after the trial
    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    same_bits(won, run())


def test_the_trial_decides_once_for_the_session(monkeypatch: pytest.MonkeyPatch, fuse_in_call: None) -> None:
    """The verdict is recorded once: later timings (here: lanes now the faster) change nothing."""
    monkeypatch.setattr(lanes_mod.Trial, "timed", slow_lanes(1e-3, 2e-3))
    first = run()
    policy = first["policy"]
    assert not policy.lanes
    policy.settle_lanes(True, "a second verdict")
    assert not policy.lanes and "a second verdict" not in str(policy)


def test_a_lost_trial_keeps_the_programs_it_compiled(monkeypatch: pytest.MonkeyPatch, fuse_in_call: None) -> None:
    """After a lost trial the schedules run the lanes' programs merged on one thread, the segments the trial
    compiled and timed: the next call runs compiled segments and compiles none (on a big Plan a serial fusion
    compiles for minutes, and until then the calls replayed act by act)."""
    from flowlab.replay.fused import Segment

    monkeypatch.setattr(lanes_mod.Trial, "timed", slow_lanes(1e-3, 1.5e-3))
    monkeypatch.setattr(lanes_mod, "KEEP_MERGED_KERNELS", 1)  # as a big Plan's (this one's fuse again serially)
    job = train_job()
    rng = np.random.default_rng(3)
    batches = [(rng.standard_normal((B, 6)).astype(np.float32), rng.integers(0, 3, B).astype(np.int32))
               for _ in range(CALLS)]
    losses = [job(*batches[0])]
    policy, call = flow.default_session().execution, 1
    while "lanes" not in policy.measured and call < CALLS - 2:  # until the verdict
        losses.append(job(*batches[call]))
        call += 1
    assert "lanes" in policy.measured and not policy.lanes, "the trial was to be lost"
    layer = flow.default_session().runtime.layer
    laned = [s for s in layer.schedules.values() if s.fused is not None]
    assert laned and all(s.lanes is None for s in layer.schedules.values())
    assert all(step.fn is not None for s in laned for step in s.fused if isinstance(step, Segment))
    compiles: list[Segment] = []
    ran: list[Segment] = []
    original_call, original_compile = Segment.__call__, Segment.compile
    monkeypatch.setattr(Segment, "compile", lambda self: compiles.append(self))

    def counted(self: Segment) -> None:
        ran.append(self)
        original_call(self)

    monkeypatch.setattr(Segment, "__call__", counted)
    losses.append(job(*batches[call]))
    # the call ran compiled segments, through the layer or (as here, callgen taken) the generated call over them
    generated = flow.default_session().generated_calls.get("dp_job")
    assert not compiles and (ran or generated is not None and generated.runs == 1)
    assert all(segment.fn is not None for segment in ran)
    assert generated is not None and all(step.fn is not None for s in generated.schedules for step in s.fused
                                         if isinstance(step, Segment))
    monkeypatch.setattr(Segment, "__call__", original_call)
    monkeypatch.setattr(Segment, "compile", original_compile)
    losses += [job(*batch) for batch in batches[call + 1:]]
    lost = {"losses": losses, "variables": {k: v.copy() for k, v in flow.get_all_variables().items()}}
    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    same_bits(lost, run())
