"""Minimal programs from the differential fuzzer that flowlab gets wrong, each marked ``xfail(strict=True)`` so
it fails loudly once the defect is fixed: then drop the mark, and lift the matching restriction in
generators.py (``KNOWN_NAN_DEFECTS``, marked ``TODO(issue 9)``)."""

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


@pytest.mark.xfail(strict=True, reason="Numba relu gives 0 for NaN (x > 0 ? x : 0); NumPy, the reference "
                                       "kernel and the oracle keep NaN (flowlab/kernels/numba_cpu/math.py _relu)")
def test_relu_keeps_nan() -> None:
    check_program(_one_op("relu", Value((2, 4), "float32")), [[NAN_ROW], [FINITE]])


@pytest.mark.xfail(strict=True, reason="Numba reduce_max skips NaN (only x > m replaces m); np.max and the "
                                       "reference kernel give NaN (flowlab/kernels/numba_cpu/reduce.py _max_rows)")
def test_reduce_max_propagates_nan() -> None:
    program = _one_op("reduce_max", Value((2,), "float32"), (("axis", 1), ("keepdims", False)))
    check_program(program, [[NAN_ROW], [FINITE]])


@pytest.mark.xfail(strict=True, reason="Numba argmax skips NaN; np.argmax and the reference kernel take the first "
                                       "NaN as the largest (flowlab/kernels/numba_cpu/reduce.py _argmax_rows)")
def test_argmax_takes_the_first_nan() -> None:
    check_program(_one_op("argmax", Value((2,), "int32"), (("axis", -1),)), [[NAN_ROW], [FINITE]])


@pytest.mark.xfail(strict=True, reason="softmax cross entropy computes -sum(label * log(softmax(x))): a class whose "
                                       "probability underflows to 0 gives 0 * log(0) = NaN, where OneFlow clamps the "
                                       "log (SafeLog); flowlab/kernels/numba_cpu/more.py _softmax_xent_rows and "
                                       "kernels/reference/more.py _softmax_xent")
def test_softmax_cross_entropy_of_an_underflowing_class_is_finite() -> None:
    import flowlab as flow
    import flowlab.typing as tp

    @flow.global_function()
    def xent_job(labels: tp.Numpy.Placeholder((1, 3)), logits: tp.Numpy.Placeholder((1, 3))) -> tp.Numpy:
        return flow.nn.softmax_cross_entropy_with_logits(labels, logits)

    loss = xent_job(np.array([[0.0, 1.0, 0.5]], np.float32), np.array([[0.0, 200.0, 1.0]], np.float32))
    assert np.isfinite(loss).all(), loss


@pytest.mark.xfail(strict=True, reason="the reference gelu (flowlab/kernels/reference/more.py:16) rounds x / sqrt(2) "
                                       "to float32 before erf; in the negative tail, where 1 + erf cancels, that "
                                       "costs ~2.5e-6 relative (gelu(-6): ~40 ulp); the Numba kernel is right")
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
