"""Steady-state replay (flowlab/replay/): a replayed call must be indistinguishable from the protocol running
it: the same numbers, the same watch callbacks, and the same protocol state and act counters afterwards."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
from flowlab.errors import KernelError
from flowlab.replay.capture import fingerprint
from tests.helpers.replay_sessions import CALLS, B, D, train_session


def run_calls(replay: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    watched: list[np.ndarray] = []
    train_job, eval_job = train_session(watched)
    rng = np.random.default_rng(3)
    losses, evals = [], []
    for call in range(CALLS):
        x = rng.random((B, D), dtype=np.float32)
        y = rng.integers(0, 3, B).astype(np.int32)
        losses.append(train_job(x, y))
        if call % 7 == 3:  # interleave another job: its transitions are captured and replayed too
            evals.append(eval_job(x))
    session = flow.default_session()
    rt = session.runtime
    return {
        "losses": losses, "evals": evals, "watched": watched, "variables": flow.get_all_variables(),
        "seq": rt.seq, "act_ids": {a.name: a.act_id for a in rt.actors.values()},
        "regst_act_ids": {(rid, r.index): r.act_id for rid, regs in rt.regsts.items() for r in regs},
        "fingerprint": fingerprint(rt), "replays": rt.layer.replays if rt.layer else 0, "layer": rt.layer,
    }


@pytest.mark.parametrize("fuse", ["1", "0"], ids=["fused", "act-by-act"])
def test_replayed_calls_match_the_protocol_bit_for_bit(fuse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_FUSE", fuse)
    protocol = run_calls(False, monkeypatch)
    replayed = run_calls(True, monkeypatch)
    assert protocol["replays"] == 0
    assert replayed["replays"] >= CALLS // 2  # most calls were replayed, not run by the protocol
    fused = [s.fused is not None for s in replayed["layer"].schedules.values() if "train_job" in s.key]
    assert fused == [fuse == "1"]
    for key in ("losses", "evals", "watched"):
        assert len(replayed[key]) == len(protocol[key]) > 0
        for a, b in zip(protocol[key], replayed[key]):
            np.testing.assert_array_equal(a, b)
    for name, value in protocol["variables"].items():
        np.testing.assert_array_equal(replayed["variables"][name], value, err_msg=name)
    # the protocol's state and counters end where the protocol alone leaves them
    assert replayed["fingerprint"] == protocol["fingerprint"]
    assert replayed["seq"] == protocol["seq"]
    assert replayed["act_ids"] == protocol["act_ids"]
    assert replayed["regst_act_ids"] == protocol["regst_act_ids"]


def test_train_step_and_learning_rate_advance_under_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The piecewise schedule switches at step 5 and the train-step counter counts every call, replayed or not."""
    result = run_calls(True, monkeypatch)
    steps = {k: v for k, v in result["variables"].items() if "TrainStep" in k}
    assert list(steps.values())[0].tolist() == [CALLS]


def test_schedules_print_what_they_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_calls(True, monkeypatch)
    replayer = result["layer"]
    train = [s for s in replayer.schedules.values() if "train_job" in s.key]
    # the wait-ids rotation is replayed by position: the push/train/pull cycle is one state, captured once;
    # after FUSE_AFTER replays all its kernels (the push, watch and pull copies, the learning-rate schedule and the
    # train step's assign among them) run as one generated segment, followed by the 4 section notifies
    assert len(train) == 1
    assert repr(train[0]) == ("CapturedCall(System-Push-Input_0 + System-Push-Input_1 + train_job + "
                              "System-Pull-Return_0: 73 acts, 29 kernels, 4 notifies, "
                              "fused into 1 segment + 4 steps)")


def test_a_hook_does_not_turn_replay_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: test_a_hook_turns_replay_off. A subscriber gets the replayed call's acts, built from its schedule."""
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    train_job, _ = train_session([])
    x, y = np.ones((B, D), np.float32), np.zeros(B, np.int32)
    for _ in range(3):
        train_job(x, y)
    rt = flow.default_session().runtime
    (schedule,) = [s for s in rt.layer.schedules.values() if "train_job" in s.key]
    events = []
    rt.hooks.append(events.append)
    before = rt.layer.replays
    train_job(x, y)
    assert rt.layer.replays == before + 1
    assert len(events) == schedule.acts  # every act of the call reached the subscriber
    assert {e.executor for e in events} == {"fused" if schedule.fused is not None else "replay"}
    kernel_tasks = {a.name for a in schedule.kernels}
    assert kernel_tasks <= {e.actor_name for e in events}


@pytest.mark.parametrize("fuse", ["1", "0"], ids=["fused", "act-by-act"])
def test_a_kernel_failing_during_replay_names_its_op_and_the_session_trains_on(fuse: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: ...and_closes_the_session. The failed call is cancelled; the session keeps training (issue 9)."""
    monkeypatch.setenv("FLOWLAB_FUSE", fuse)
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    train_job, _ = train_session([])
    x, y = np.ones((B, D), np.float32), np.zeros(B, np.int32)
    for _ in range(CALLS):
        train_job(x, y)
    rt = flow.default_session().runtime
    assert rt.layer.replays > 0
    (schedule,) = [s for s in rt.layer.schedules.values() if "train_job" in s.key]
    assert (schedule.fused is not None) == (fuse == "1")  # the checked xent runs inside a fused segment
    with pytest.raises(KernelError, match=r"sparse_softmax_cross_entropy.*label"):
        train_job(x, np.full(B, 7, np.int32))  # labels out of range for 3 classes
    went_on = [train_job(x, y) for _ in range(3)], flow.get_all_variables()  # the same session trains on
    reference, _ = train_session([])  # a session that never saw the bad batch
    for _ in range(CALLS):
        reference(x, y)
    want = [reference(x, y) for _ in range(3)], flow.get_all_variables()
    for got, expected in zip(went_on[0], want[0]):
        np.testing.assert_array_equal(got, expected)
    for name, value in want[1].items():
        np.testing.assert_array_equal(went_on[1][name], value)


def test_inputs_off_the_fast_path_replay_like_plain_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused segment takes pushed arrays as arguments: Fortran-ordered, read-only or listed inputs must give
    what the protocol gives for the same values as plain C arrays (and a bad one still fails before any act)."""
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    rng = np.random.default_rng(5)
    xs = [rng.random((B, D), dtype=np.float32) for _ in range(CALLS)]
    ys = [rng.integers(0, 3, B).astype(np.int32) for _ in range(CALLS)]

    def losses(variant: int) -> list[np.ndarray]:
        train_job, _ = train_session([])
        out = []
        for k, (x, y) in enumerate(zip(xs, ys)):
            if variant and k > 20:  # past fusion: the segment is compiled for C-contiguous writable arrays
                x = np.asfortranarray(x) if k % 2 else np.frombuffer(x.tobytes(), np.float32).reshape(B, D)
            out.append(train_job(x, y))
        return out

    plain, odd = losses(0), losses(1)
    assert flow.default_session().runtime.layer.replays > CALLS // 2
    for a, b in zip(plain, odd):
        np.testing.assert_array_equal(a, b)
    train_job, _ = train_session([])
    with pytest.raises(flow.errors.JobArgumentError, match="dtype"):
        train_job(xs[0].astype(np.float64), ys[0])
