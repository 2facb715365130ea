"""Failure semantics (issue 9): a failing call raises and leaves the session usable, with the variables of the last
completed step; nested job calls, empty sessions, raising watch handlers and huge shapes fail clearly."""

from __future__ import annotations

import errno
import re

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import KernelError, SessionStateError
from flowlab.runtime.checkpoint_io import CheckpointError
from tests.helpers.failure_semantics import BATCHES, C, assert_same_variables, define_train, failing_late


def run_reference(batches):
    """Losses and final variables of a session that only ever saw ``batches``."""
    flow.clear_default_session()
    job = define_train()
    losses = [job(x, y) for x, y in batches]
    return losses, flow.get_all_variables()


@pytest.fixture(params=[True, False], ids=["replay", "protocol"])
def replay(request, monkeypatch):
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if request.param else "0")
    return request.param


def test_an_out_of_range_label_raises_and_the_session_trains_on(replay, monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", "reference")  # the reference kernel checks labels
    good = BATCHES[:10]
    want_losses, want_vars = run_reference(good)
    flow.clear_default_session()
    job = define_train()
    losses = [job(x, y) for x, y in good[:5]]
    after_five = flow.get_all_variables()
    bad_y = good[5][1].copy()
    bad_y[2] = C + 4
    with pytest.raises(KernelError, match=r"op 'sparse_softmax_cross_entropy\w*' \(sparse_softmax_cross_entropy"
                                          r"\w*\) \(created at failure_semantics.py:\d+\) in job 'train_job' "
                                          r"raised IndexError: label 7"):
        job(good[5][0], bad_y)
    assert flow.default_session().status.value == "RUNNING" and flow.default_session().cancelled_calls == 1
    assert_same_variables(flow.get_all_variables(), after_five)
    losses += [job(x, y) for x, y in good[5:]]
    for got, want in zip(losses, want_losses):
        np.testing.assert_array_equal(got, want)
    assert_same_variables(flow.get_all_variables(), want_vars)


@pytest.mark.parametrize("optimizer,update", [("adam", "adam_update"), ("momentum", "momentum_update")])
def test_a_failure_in_the_last_update_leaves_every_variable_as_after_the_last_step(optimizer, update, replay,
                                                                                   monkeypatch):
    state = failing_late(monkeypatch, update)
    good = BATCHES[:8]
    flow.clear_default_session()
    ref = define_train(optimizer)
    ref_losses = [ref(x, y) for x, y in good]
    ref_vars = flow.get_all_variables()
    flow.clear_default_session()
    job = define_train(optimizer)
    state["acts"] = 0
    losses = [job(x, y) for x, y in good[:4]]
    state["per_call"] = state["acts"] // 4  # the update's acts per call: one per trained variable
    assert state["per_call"] == 4
    state["acts"], state["armed"] = 0, True
    before = flow.get_all_variables()
    assert any(name.endswith("-m") or name.endswith("-momentum") for name in before)  # optimizer state too
    with pytest.raises(KernelError, match=rf"_optimizer' \({update}\) in job 'train_job' raised "
                                          r"OSError: simulated failure of the last update"):
        job(*good[4])
    assert_same_variables(flow.get_all_variables(), before)
    state["armed"] = False
    losses += [job(x, y) for x, y in good[4:]]
    for got, want in zip(losses, ref_losses):
        np.testing.assert_array_equal(got, want)
    assert_same_variables(flow.get_all_variables(), ref_vars)


def test_a_failed_save_keeps_the_session_and_a_later_save_works(tmp_path, monkeypatch):
    from flowlab.runtime import checkpoint_io

    job = define_train()
    for x, y in BATCHES[:3]:
        job(x, y)
    trained = flow.get_all_variables()
    real_save = checkpoint_io.save_variable
    written, full = [], [True]

    def disk_full(root, name, value):
        if written and full:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(name)
        real_save(root, name, value)

    monkeypatch.setattr(checkpoint_io, "save_variable", disk_full)
    flow.clear_default_session()  # kernels bind save_variable when the runtime is built
    job = define_train()
    for x, y in BATCHES[:3]:
        job(x, y)
    with pytest.raises(KernelError, match=r"System-ModelSave.*No space left on device"):
        flow.checkpoint.save(tmp_path / "full")
    full.clear()  # the disk has room again
    assert_same_variables(flow.get_all_variables(), trained)
    flow.checkpoint.save(tmp_path / "ok")
    saved = {name: blob.numpy() for name, blob in flow.checkpoint.get(tmp_path / "ok").items()}
    assert_same_variables(saved, trained)
    job(*BATCHES[3])


def test_a_save_path_too_long_for_the_variables_keeps_the_session(tmp_path):
    job = define_train()
    job(*BATCHES[0])
    trained = flow.get_all_variables()
    root = tmp_path
    while len(str(root)) < 4096 - 400:  # the directory fits, a variable's file under it does not (PATH_MAX)
        root = root / ("d" * 200)
    root = root / ("e" * (4085 - len(str(root)) - 1))
    with pytest.raises(KernelError, match=r"System-ModelSave.*File name too long"):
        flow.checkpoint.save(root)
    assert_same_variables(flow.get_all_variables(), trained)
    flow.checkpoint.save(tmp_path / "short")
    job(*BATCHES[1])


def test_a_raising_watch_handler_gets_its_error_raised_after_every_handler_ran():
    seen: list[np.ndarray] = []

    def bad(array):
        raise ValueError("handler boom")

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        flow.watch(x, bad)
        flow.watch(x * 3.0, seen.append)
        return x * 2.0

    x = np.arange(3, dtype=np.float32)
    with pytest.raises(flow.WatchHandlerError, match=r"1 watch handler.*raised.*ValueError: handler boom") as info:
        job(x)
    np.testing.assert_array_equal(info.value.result, x * 2)  # the call's result is not lost
    assert isinstance(info.value.errors[0], ValueError) and info.value.__cause__ is info.value.errors[0]
    assert len(seen) == 1 and np.array_equal(seen[0], x * 3)  # the other handler got its value in that call
    with pytest.raises(flow.WatchHandlerError):
        job(x + 1)
    assert len(seen) == 2 and np.array_equal(seen[1], (x + 1) * 3)  # nothing left over from the first call


def test_a_job_called_inside_another_jobs_body_is_an_error_at_its_line():
    @flow.global_function()
    def inner(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x * 2.0

    @flow.global_function()
    def outer(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return inner(np.ones(3, np.float32)) + x  # the inner call

    with pytest.raises(SessionStateError, match=r"job function 'inner' was called while tracing job 'outer' "
                                                r"\(at test_failure_semantics.py:\d+\); job functions cannot be "
                                                r"called inside another job function's body") as info:
        outer(np.zeros(3, np.float32))
    line = int(re.search(r"test_failure_semantics.py:(\d+)", str(info.value))[1])
    assert "the inner call" in open(__file__).read().splitlines()[line - 1]
    assert flow.default_session().status.value == "OPEN"  # nothing was compiled


def test_an_empty_session_has_no_variables_and_stays_open(tmp_path):
    assert flow.get_all_variables() == {}
    flow.train.CheckPoint().init()  # nothing to initialize
    flow.load_variables({})
    flow.load_variables({"w": np.zeros(3)})  # unknown names are ignored, as with any session
    with pytest.raises(CheckpointError, match="no variable 'w'; variables are \\[\\]"):
        flow.load_variables({"w": np.zeros(3)}, ignore_mismatch=False)
    with pytest.raises(CheckpointError, match="no job functions, so it has no variables to save"):
        flow.checkpoint.save(tmp_path / "empty")
    with pytest.raises(CheckpointError, match="no job functions, so it has no variables to load"):
        flow.checkpoint.load(tmp_path)
    assert flow.default_session().status.value == "OPEN"

    @flow.global_function()  # jobs can still be added: the empty session never started
    def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x + 1.0

    np.testing.assert_array_equal(job(np.zeros(2, np.float32)), np.ones(2, np.float32))


def test_a_huge_placeholder_names_the_job_the_blob_and_the_bytes():
    @flow.global_function()
    def small(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x * 2.0

    @flow.global_function()
    def huge(x: tp.Numpy.Placeholder((1_000_000, 1_000_000))) -> tp.Numpy:
        return x * 2.0

    with pytest.raises(MemoryError, match=r"job 'huge' needs 4,000,000,000,000 bytes \(3.64 TiB\) for blob "
                                          r"'Input_1/out' f32\[1000000,1000000\]"):
        small(np.zeros(3, np.float32))
    assert flow.default_session().status.value == "OPEN"


def test_blocks_that_fit_alone_but_not_together_fail_before_allocating(monkeypatch):
    from flowlab.runtime import regst

    monkeypatch.setattr(regst, "physical_memory", lambda: 1 << 20)  # a machine with 1 MiB

    @flow.global_function()
    def big(x: tp.Numpy.Placeholder((150_000,))) -> tp.Numpy:  # 600 kB a block
        return x * 2.0

    with pytest.raises(MemoryError, match=r"job 'big' needs 600,000 bytes \(585.94 KiB\) for blob '\S+' "
                                          r"f32\[150000\] .*memory blocks need [\d,]+ bytes .* in all, and this "
                                          r"machine has 1.00 MiB"):
        big(np.zeros(150_000, np.float32))


def test_a_users_runtime_hooks_survive_a_cancelled_call(monkeypatch):
    """The runtime is rebuilt after a failed call; subscribers the user attached go on receiving its acts."""
    monkeypatch.setenv("FLOWLAB_KERNELS", "reference")
    flow.clear_default_session()
    job = define_train()
    x, y = BATCHES[0]
    job(x, y)
    events = []
    flow.default_session().runtime.hooks.append(events.append)
    bad_y = y.copy()
    bad_y[0] = -1
    with pytest.raises(KernelError):
        job(x, bad_y)
    before = len(events)
    job(x, y)
    acted = {e.actor_name for e in events[before:]}
    assert any("sparse_softmax_cross_entropy" in name for name in acted), sorted(acted)[:5]
