"""Fused segments compiled on a background thread (issue 13): until a segment's function is ready its acts run one
by one, and the calls are the protocol's bit for bit before, during and after; a failed compile warns and leaves
the acts running one by one; a segment's source is the same text in another process, which loads it from Numba's
cache instead of compiling it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import flowlab as flow
from flowlab.errors import KernelError
from flowlab.replay import fused
from flowlab.replay.fused import Segment
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import assert_replayed_and_fused, assert_same, run
from tests.helpers.replay_sessions import CALLS, B, D, train_session

RELEASE = 13  # the call before which the held compiles are let go (fusion is at the 9th call)
TOTAL = 20


def segments() -> list[Segment]:
    layer = flow.default_session().runtime.layer
    return [step for s in layer.schedules.values() for step in (s.fused or []) if isinstance(step, Segment)]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Background compiles that start only when the returned event is set."""
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "1")
    gate = threading.Event()
    submit = fused._submit

    def held_submit(job: Callable[[], None]) -> Any:
        def later() -> None:
            gate.wait(120)
            job()

        return submit(later)

    monkeypatch.setattr(fused, "_submit", held_submit)
    yield gate
    gate.set()
    fused.wait_compiled(300)


def releasing(build: Callable[[list[np.ndarray]], Callable[[int], Any]], gate: threading.Event,
              seen: dict[str, list[bool]]) -> Callable[[list[np.ndarray]], Callable[[int], Any]]:
    """The model, with the held compiles let go (and waited for) before call RELEASE; ``seen`` records whether
    the segments were compiled just before and at the end."""

    def wrapped(watched: list[np.ndarray]) -> Callable[[int], Any]:
        call = build(watched)

        def one(k: int) -> Any:
            if k == RELEASE:
                seen["before"] = [s.fn is not None for s in segments()]
                gate.set()
                fused.wait_compiled(300)
            out = call(k)
            if k == TOTAL - 1:
                seen["after"] = [s.fn is not None for s in segments()]
            return out

        return one

    return wrapped


@pytest.mark.parametrize("kernels", ["numba", "tiered"])
@pytest.mark.parametrize("model", ["mlp_sgd_momentum", "watch_dropout"])
def test_calls_are_the_protocol_while_a_segment_compiles_and_after(model: str, kernels: str, held: threading.Event,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """In either kernel mode (tiered: the default, calls after the first on Numba's kernels, kernels/tiered.py)."""
    monkeypatch.setenv("FLOWLAB_KERNELS", kernels)
    protocol = run(MODELS[model], False, TOTAL, monkeypatch)
    seen: dict[str, list[bool]] = {}
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "1")  # run() sets the rest of the environment
    replayed = run(releasing(MODELS[model], held, seen), True, TOTAL, monkeypatch)
    assert seen["before"] and not any(seen["before"]), "calls 9-12 should have run the segments act by act"
    assert seen["after"] and all(seen["after"]), "the segments should be compiled once the compiles were let go"
    assert_replayed_and_fused(replayed, "train", TOTAL)
    assert_same(protocol, replayed)


def test_a_failed_compile_warns_once_and_the_acts_run_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "1")

    def broken(self: Segment) -> None:
        raise RuntimeError("no LLVM today")

    protocol = run(MODELS["mlp_sgd_momentum"], False, TOTAL, monkeypatch)
    monkeypatch.setattr(Segment, "compile", broken)
    build = MODELS["mlp_sgd_momentum"]

    def waiting(watched: list[np.ndarray]) -> Callable[[int], Any]:
        call = build(watched)

        def one(k: int) -> Any:
            fused.wait_compiled(300)  # the failed compile is known before the call
            return call(k)

        return one

    with pytest.warns(RuntimeWarning, match="could not compile.*no LLVM today") as warned:
        replayed = run(waiting, True, TOTAL, monkeypatch)
    assert len([w for w in warned if "could not compile" in str(w.message)]) == len(segments())
    assert segments() and all(s.fn is None for s in segments())
    assert_same(protocol, replayed)


def test_a_kernel_failing_while_its_segment_compiles_names_its_op(held: threading.Event,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    train_job, _ = train_session([])
    x, y = np.ones((B, D), np.float32), np.zeros(B, np.int32)
    for _ in range(CALLS):
        train_job(x, y)
    assert segments() and all(s.fn is None for s in segments())
    with pytest.raises(KernelError, match=r"sparse_softmax_cross_entropy.*label"):
        train_job(x, np.full(B, 7, np.int32))  # labels out of range for 3 classes
    went_on = train_job(x, y)  # the session trains on, as one that never saw the bad batch
    reference, _ = train_session([])
    for _ in range(CALLS):
        reference(x, y)
    np.testing.assert_array_equal(went_on, reference(x, y))


PROGRAM = """
import json, numpy as np, flowlab as flow, flowlab.typing as tp
from flowlab.replay.fused import Segment

@flow.global_function()
def f(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
    return flow.math.relu(x) * 2.0

for k in range(12):
    f(np.full((4, 3), k - 5.0, np.float32))
layer = flow.default_session().runtime.layer
print(json.dumps([[s.source_path.name, s.cache_hit] for sched in layer.schedules.values()
                  for s in (sched.fused or []) if isinstance(s, Segment)]))
"""


def test_another_process_loads_the_segment_from_the_cache(tmp_path: Path) -> None:
    env = dict(os.environ, FLOWLAB_CACHE_DIR=str(tmp_path), FLOWLAB_FUSE_BACKGROUND="0", FLOWLAB_KERNELS="numba",
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    env.pop("NUMBA_CACHE_DIR", None)

    def segments_of_a_fresh_process() -> list[list[Any]]:
        out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = segments_of_a_fresh_process()
    second = segments_of_a_fresh_process()
    assert first and [hit for _, hit in first] == [False] * len(first)  # compiled (the cache was empty) ...
    assert [name for name, _ in second] == [name for name, _ in first]  # ... the same text in a new process ...
    assert [hit for _, hit in second] == [True] * len(second)  # ... found in the cache


def test_at_exit_the_running_compile_finishes_and_the_queued_ones_are_dropped() -> None:
    code = ("import time\nfrom flowlab.replay import fused\n"
            "for i in range(4):\n    fused._submit(lambda i=i: (time.sleep(1), print('compiled', i, flush=True)))\n"
            "time.sleep(0.2)\nprint('exiting', flush=True)\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=60).stdout.split("\n")
    assert out[:3] == ["exiting", "compiled 0", ""]
