"""Failure semantics of a fused replay while its segments compile (replay/fused.py: until its function is ready a
segment runs its acts one by one, and each act taking an external fetches or allocates it at that act, not before
the segment's first): a failing pull at the end of a segment, after the optimizer updates, leaves every variable as
before the call; once compiled, the guard is back to what precedes the last check."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as flow
from flowlab.errors import KernelError
from flowlab.replay.fused import FUSE_AFTER, Segment
from tests.helpers.failure_semantics import BATCHES, assert_same_variables, define_train

STEP = "System-Train-TrainStep-train_job"


@pytest.fixture(autouse=True)
def compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "1")
    # the background compile never finishes here: every segment stays act by act, as in its compile's seconds
    monkeypatch.setattr(Segment, "compile_in_background", lambda self: None)


def train_schedule() -> Any:
    [schedule] = [s for s in flow.default_session().runtime.layer.schedules.values() if "train_job" in s.key]
    return schedule


def test_a_failing_pull_in_a_segment_still_compiling_leaves_the_variables_as_before_the_call() -> None:
    good = BATCHES[:14]
    ref = define_train("momentum")
    want = [ref(x, y) for x, y in good]
    flow.clear_default_session()
    job = define_train("momentum")
    losses = [job(x, y) for x, y in good[: FUSE_AFTER + 2]]
    schedule = train_schedule()
    assert schedule.fused is not None
    [(segment, k)] = [(step, k) for step in schedule.fused if isinstance(step, Segment)
                      for k, actor in enumerate(step.actors) if actor.name.endswith("ForeignOutput")]
    assert segment.fn is None and any(a.name.endswith("optimizer") for a in segment.actors[:k])  # after updates
    real = segment.steps[k]

    def failing() -> None:
        real()
        raise MemoryError("injected failure")

    before = flow.get_all_variables()
    segment.steps[k] = failing
    with pytest.raises(KernelError, match="injected failure"):
        job(*good[FUSE_AFTER + 2])
    segment.steps[k] = real
    assert_same_variables(flow.get_all_variables(), before)
    losses += [job(x, y) for x, y in good[FUSE_AFTER + 2:]]
    for got, expected in zip(losses, want, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_the_guard_narrows_to_what_precedes_the_last_check_once_the_segments_compile() -> None:
    job = define_train("momentum")
    for x, y in BATCHES[: FUSE_AFTER + 2]:
        job(x, y)
    schedule = train_schedule()
    layer = flow.default_session().runtime.layer
    assert schedule.fused is not None and schedule in layer.compiling
    assert STEP in schedule.guarded and "hidden-weight" in schedule.guarded  # the pull may fail after the updates
    job(*BATCHES[FUSE_AFTER + 2])
    assert schedule in layer.compiling and "hidden-weight" in schedule.guarded  # still act by act
    for step in schedule.fused:
        if isinstance(step, Segment):
            step.compile()
    job(*BATCHES[FUSE_AFTER + 3])
    assert schedule.guarded == (STEP,) and not layer.compiling  # every update follows every label check
