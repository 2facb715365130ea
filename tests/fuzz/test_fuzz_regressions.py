"""Minimal programs from the differential fuzzer that flowlab got wrong, kept as regression tests: Numba relu,
reduce_max and argmax dropped NaN; softmax cross entropy gave NaN for a class whose probability underflows;
the reference gelu lost accuracy in its negative tail (x / sqrt 2 rounded to float32 before erf). A new finding
goes here first as ``xfail(strict=True)``, with its generator restriction marked ``TODO``, until it is fixed."""

from __future__ import annotations

import numpy as np
import pytest

from .programs import Node, Program, Value
from .runner import check_program

NAN_ROW = np.array([[1.0, np.nan, 3.0, -1.0], [np.nan, -np.inf, 0.0, 2.0]], np.float32)
FINITE = np.array([[1.0, 5.0, 3.0, -1.0], [0.5, -2.0, 0.0, 2.0]], np.float32)


def _one_op(fn: str, out: Value, kw: tuple = ()) -> Program:
    x = Value((2, 4), "float32")
    return Program((x,), (Node(fn, (0,), kw),), (x, out), (1,))


def test_relu_keeps_nan() -> None:
    check_program(_one_op("relu", Value((2, 4), "float32")), [[NAN_ROW], [FINITE]])


def test_reduce_max_propagates_nan() -> None:
    program = _one_op("reduce_max", Value((2,), "float32"), (("axis", 1), ("keepdims", False)))
    check_program(program, [[NAN_ROW], [FINITE]])


def test_argmax_takes_the_first_nan() -> None:
    check_program(_one_op("argmax", Value((2,), "int32"), (("axis", -1),)), [[NAN_ROW], [FINITE]])


def test_softmax_cross_entropy_of_an_underflowing_class_is_finite() -> None:
    import flowlab as flow
    import flowlab.typing as tp

    @flow.global_function()
    def xent_job(labels: tp.Numpy.Placeholder((1, 3)), logits: tp.Numpy.Placeholder((1, 3))) -> tp.Numpy:
        return flow.nn.softmax_cross_entropy_with_logits(labels, logits)

    loss = xent_job(np.array([[0.0, 1.0, 0.5]], np.float32), np.array([[0.0, 200.0, 1.0]], np.float32))
    assert np.isfinite(loss).all(), loss


def test_reference_gelu_is_accurate_in_the_negative_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    import math

    import flowlab as flow
    import flowlab.typing as tp

    monkeypatch.setenv("FLOWLAB_KERNELS", "reference")

    @flow.global_function()
    def gelu_job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.nn.gelu(x)

    x = np.array([-6.0, -7.0, -8.0], np.float32)
    expected = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    np.testing.assert_allclose(gelu_job(x), expected, rtol=1e-6)
