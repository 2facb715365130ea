"""OneFlow semantics of the op functions beyond a single kernel: argmax on any axis, dense on rank > 2 inputs
and its op names, bias_add's data_format, labels of shape (N, 1), integer scalars, and kernels that refuse
out-of-range labels."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import KernelError
from tests.helpers.ops_table import run_job

RNG = np.random.default_rng(5)


def trace_only(build, *shapes):
    """Trace ``build`` on float placeholders of ``shapes`` (running the job once) and return the job's ops."""
    run_job(build, *[np.zeros(s, np.float32) for s in shapes])
    return flow.default_session().job_set.job("job").ops


def test_dense_on_rank_3_is_per_vector_as_in_oneflow(kernel_impl):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    init = flow.random_uniform_initializer(-1, 1)
    out = run_job(lambda b: flow.layers.dense(b, 5, activation=flow.nn.relu, kernel_initializer=init,
                                              bias_initializer=init, name="d"), x)
    w = flow.get_all_variables()
    assert w["d-weight"].shape == (5, 4) and w["d-bias"].shape == (5,)
    assert out.shape == (2, 3, 5)
    np.testing.assert_allclose(out, np.maximum(x @ w["d-weight"].T + w["d-bias"], 0), rtol=1e-5, atol=1e-6)


def test_dense_names_its_ops_inside_the_scope():
    names = {op.name for op in trace_only(lambda b: flow.layers.dense(b, 3, activation=flow.math.tanh, name="h"),
                                          (2, 4))}
    assert {"h-weight", "h-bias", "h-matmul", "h-bias_add", "h-activation"} <= names


def test_dense_accepts_an_activation_without_a_name_parameter():
    names = {op.name for op in trace_only(lambda b: flow.layers.dense(b, 3, activation=lambda t: t * 2.0), (2, 4))}
    assert "Dense-matmul" in names and "Dense-activation" not in names


@pytest.mark.parametrize("bad, error", [(0, "positive int number of units"), (2.0, "positive int")])
def test_dense_bad_units(bad, error):
    with pytest.raises(ValueError, match=error):
        trace_only(lambda b: flow.layers.dense(b, bad), (2, 4))


def test_dense_needs_rank_2():
    with pytest.raises(ValueError, match=r"rank >= 2 \(batch, features\); got f32\[4\]"):
        trace_only(lambda b: flow.layers.dense(b, 3), (4,))


def test_argmax_axis_out_of_range():
    with pytest.raises(ValueError, match=r"argmax: axis 3 is out of range for f32\[2,3\] \(rank 2\)"):
        trace_only(lambda b: flow.math.argmax(b, axis=3), (2, 3))


@pytest.mark.parametrize("fmt, axis", [(None, 1), ("NCHW", 1), ("NCW", 1), ("NHWC", 3), ("NWC", 3)])
def test_bias_add_data_format_picks_the_channel_axis(fmt, axis):
    shape = (2, 3, 3, 3)
    (op,) = [op for op in trace_only(lambda a, b: flow.nn.bias_add(a, b, data_format=fmt), shape, (3,))
             if op.op_type == "bias_add"]
    assert op.attrs["axis"] == axis


def test_bias_add_rejects_an_unknown_data_format():
    with pytest.raises(ValueError, match=r"data_format must be None, 'NC\.\.\.'.*got 'HWC'"):
        trace_only(lambda a, b: flow.nn.bias_add(a, b, data_format="HWC"), (2, 3), (3,))


@pytest.mark.parametrize("build, error, words", [
    (lambda x: x * 0.5, TypeError, "scalar_mul of the int32 blob i32[4] by the non-integer 0.5"),
    (lambda x: x + 1.5, TypeError, "cast the blob to a floating dtype first"),
    (lambda x: x / 2.5, TypeError, "non-integer 2.5"),
    (lambda x: x / 0, ZeroDivisionError, "by the constant 0"),
])
def test_integer_blobs_and_non_integer_numbers(build, error, words):
    with pytest.raises(error) as err:
        run_job(build, np.arange(4, dtype=np.int32))
    assert words in str(err.value)


@pytest.mark.parametrize("train", [False, True])
def test_an_out_of_range_label_is_a_kernel_error(kernel_impl, train):
    logits = RNG.standard_normal((3, 4)).astype(np.float32)
    labels = np.array([0, 4, 1], np.int32)

    if train:
        @flow.global_function(type="train")
        def job(lab: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
            w = flow.get_variable("w", shape=(3, 4), initializer=flow.zeros_initializer())
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(lab, w)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
            return loss

        call = lambda: job(labels)
    else:
        def call():
            return run_job(lambda lab, x: flow.nn.sparse_softmax_cross_entropy_with_logits(lab, x), labels, logits)
    with pytest.raises(KernelError, match=r"label 4 \(at flat index 1\) is out of range for 4 classes"):
        call()
