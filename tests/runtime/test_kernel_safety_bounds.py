"""Kernels that index with data (gather, its gradient, sparse labels) check every index before touching memory,
in both kernel modes, and the error names the op, the bad value and the valid range (issue 9, defect 1)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import KernelError
from flowlab.kernels import registry
from tests.ops.helpers import run_op

IMPLS = ["reference", "numba"]
PARAMS = np.arange(15, dtype=np.float32).reshape(5, 3)


def gather_job(n_ids: int, axis: int = 0):
    def gather_Job(params: tp.Numpy.Placeholder((5, 3)),
                   ids: tp.Numpy.Placeholder((n_ids,), dtype=flow.int32)) -> tp.Numpy:
        return flow.gather(params, ids, axis=axis)

    gather_Job.__name__ = "gather_Job" if axis == 0 else f"gather_axis{axis}_Job"
    return flow.global_function()(gather_Job)


@pytest.mark.parametrize("bad", [5, 7, -1, -6, 2**31 - 1])
def test_gather_out_of_range_is_an_error_naming_value_and_range(kernel_impl, bad):
    job = gather_job(4)
    with pytest.raises(KernelError, match=rf"op 'gather_0' \(gather\) \(created at test_kernel_safety_bounds.py:\d+\) "
                                          rf"in job 'gather_Job' raised IndexError: index {bad} \(at flat position 2 "
                                          rf"of shape \(4,\)\) is out of range \[0, 5\) along axis 0 of 'in' "
                                          rf"\(shape \(5, 3\)\)"):
        job(PARAMS, np.array([0, 1, bad, 2], np.int32))


def test_gather_along_axis_1_checks_that_axis(kernel_impl):
    job = gather_job(2, axis=1)
    with pytest.raises(KernelError, match=r"index 3 \(at flat position 1 of shape \(2,\)\) is out of range \[0, 3\) "
                                          r"along axis 1 of 'in' \(shape \(5, 3\)\)"):
        job(PARAMS, np.array([0, 3], np.int32))


def test_gather_at_the_edges_of_the_range(kernel_impl):
    rows, cols = gather_job(4), gather_job(2, axis=1)
    np.testing.assert_array_equal(rows(PARAMS, np.array([0, 4, 4, 0], np.int32)), PARAMS[[0, 4, 4, 0]])
    out = cols(PARAMS, np.array([2, 0], np.int32))
    np.testing.assert_array_equal(out, PARAMS[:, [2, 0]])


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64, np.int8, np.uint8])
def test_gather_and_segment_sum_kernels_check_before_writing(impl, ids_dtype):
    ids = np.array([[1, 0], [9, 2]], ids_dtype)
    with pytest.raises(IndexError, match=r"index 9 \(at flat position 2 of shape \(2, 2\)\) is out of range \[0, 5\) "
                                         r"along axis 0 of 'in' \(shape \(5, 3\)\)"):
        run_op("gather", {"in": [PARAMS], "indices": [ids]}, {"axis": 0}, impl)
    data = np.ones((2, 2, 3), np.float32)
    with pytest.raises(IndexError, match=r"segment id 9 \(at flat position 2 of shape \(2, 2\)\) is out of range "
                                         r"\[0, 5\) along axis 0 of 'like' \(shape \(5, 3\)\)"):
        run_op("unsorted_segment_sum_like", {"data": [data], "segment_ids": [ids], "like": [PARAMS]}, {"axis": 0},
               impl)


def _train_gather_job():
    @flow.global_function(type="train")
    def embed_Job(ids: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        table = flow.get_variable("table", shape=(5, 3), initializer=flow.random_uniform_initializer())
        loss = flow.math.reduce_sum(flow.gather(table, ids))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    return embed_Job


def _snapshot() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The live variable arrays (views that outlive a closed session) and copies of their values now."""
    live = flow.default_session().variable_arrays()
    return live, {k: v.copy() for k, v in live.items()}


def _assert_unchanged(live: dict[str, np.ndarray], before: dict[str, np.ndarray]) -> None:
    """Every user variable as before. (The train-step counter is left out: its increment is an op of the forward
    that may have run before the failing act; undoing a partial step is the runtime's recovery, not a kernel's.)"""
    assert set(live) == set(before)
    for name in live:
        if name.startswith("System-Train-TrainStep"):
            continue
        np.testing.assert_array_equal(live[name], before[name], err_msg=name)


def test_a_train_job_with_a_bad_index_fails_and_changes_no_variable(kernel_impl):
    job = _train_gather_job()
    job(np.array([0, 1, 4, 4], np.int32))  # edges work, and the session is running
    live, before = _snapshot()
    with pytest.raises(KernelError, match=r"\(gather\) .* in job 'embed_Job' raised IndexError: index 5 .* out of "
                                          r"range \[0, 5\)"):
        job(np.array([0, 5, 1, 1], np.int32))
    _assert_unchanged(live, before)


def test_a_bad_index_that_reaches_the_backward_is_caught_there(kernel_impl, monkeypatch):
    """The gradient's scatter checks on its own: with a forward gather that (wrongly) checks nothing, the bad
    index reaches unsorted_segment_sum_like, which must raise before it writes out of bounds."""

    def unchecked_gather(ctx):
        def kernel(ins, outs):
            outs[0][...] = 0

        return kernel

    registry.get_kernel_factory("gather", kernel_impl)  # imports (registers) the kernels before the patch
    monkeypatch.setitem(registry._KERNELS, ("gather", kernel_impl, "cpu"), unchecked_gather)
    job = _train_gather_job()
    job(np.array([0, 1, 2, 3], np.int32))
    live, before = _snapshot()
    with pytest.raises(KernelError, match=r"\(unsorted_segment_sum_like\) in job 'embed_Job' raised IndexError: "
                                          r"segment id 1000000 \(at flat position 3 of shape \(4,\)\) is out of range "
                                          r"\[0, 5\) along axis 0 of 'like' \(shape \(5, 3\)\)"):
        job(np.array([0, 1, 2, 1_000_000], np.int32))
    _assert_unchanged(live, before)


def test_sparse_labels_out_of_range_in_a_train_job(kernel_impl):
    @flow.global_function(type="train")
    def xent_Job(labels: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        logits = flow.get_variable("logits", shape=(3, 4), initializer=flow.random_uniform_initializer())
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    assert np.isfinite(xent_Job(np.array([0, 3, 3], np.int32))).all()  # 0 and classes - 1 are labels
    live, before = _snapshot()
    with pytest.raises(KernelError, match=r"\(sparse_softmax_cross_entropy\) .* raised IndexError: label -1 \(at "
                                          r"flat index 2\) is out of range for 4 classes; labels must be in \[0, 4\)"):
        xent_Job(np.array([0, 1, -1], np.int32))
    _assert_unchanged(live, before)


def test_a_bad_label_that_reaches_the_backward_is_caught_there(kernel_impl, monkeypatch):
    """As for gather: with a forward that (wrongly) checks nothing, the gradient's own label check fires."""
    from flowlab.kernels.reference.nn import softmax

    def unchecked_xent(ctx):
        def kernel(ins, outs):
            outs[0][...] = softmax(ins[0])
            outs[1][...] = 0

        return kernel

    registry.get_kernel_factory("sparse_softmax_cross_entropy", kernel_impl)
    monkeypatch.setitem(registry._KERNELS, ("sparse_softmax_cross_entropy", kernel_impl, "cpu"), unchecked_xent)

    @flow.global_function(type="train")
    def xent_Job(labels: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        logits = flow.get_variable("logits", shape=(3, 4), initializer=flow.random_uniform_initializer())
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    xent_Job(np.array([0, 3, 1], np.int32))
    live, before = _snapshot()
    with pytest.raises(KernelError, match=r"\(sparse_softmax_cross_entropy_grad\) in job 'xent_Job' raised "
                                          r"IndexError: label 4 \(at flat index 1\) is out of range for 4 classes"):
        xent_Job(np.array([0, 4, 1], np.int32))
    _assert_unchanged(live, before)


def test_argmax_feeding_gather_stays_in_range(kernel_impl):
    """argmax's output is an index consumer's input: it is always in [0, n), NaN rows included."""

    @flow.global_function()
    def pick_Job(x: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
        return flow.gather(flow.transpose(x, [1, 0]), flow.math.argmax(x))

    x = np.array([[1, 5, 2, 0], [np.nan, 1, 2, 3], [0, 1, 2, np.nan]], np.float32)
    out = pick_Job(x)
    np.testing.assert_array_equal(out, x.T[[1, 0, 3]])


def test_a_bad_index_in_a_replayed_fused_call(kernel_impl):
    """After enough calls the runtime replays the job and fuses its Numba kernels into one generated function;
    the gather there is a checked call that stops the segment before it touches memory, and the Python
    kernel raises the same error."""
    job = gather_job(4)
    good = np.array([4, 0, 3, 1], np.int32)
    for _ in range(12):
        np.testing.assert_array_equal(job(PARAMS, good), PARAMS[good])
    with pytest.raises(KernelError, match=r"\(gather\) .* raised IndexError: index 9 \(at flat position 3 of shape "
                                          r"\(4,\)\) is out of range \[0, 5\) along axis 0 of 'in'"):
        job(PARAMS, np.array([4, 0, 3, 9], np.int32))
