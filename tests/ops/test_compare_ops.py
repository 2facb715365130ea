"""Comparisons, maximum/minimum, floor mod, where, masked_fill, broadcast_to_compatible_with and constant_like
(ops/compare_ops.py): blob operators against NumPy, both CPU kernel modes, gradients against finite differences,
a 2-device split run against one device, and the errors. (CUDA kernels: tests/cuda/test_kernels.py from
op_samples.py; SBP exactness: tests/compiler/test_sbp_rules_exact.py; OneFlow's own tests: tests/oneflow/.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError
from tests.helpers.gradients import check, v

from .helpers import run_op

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_kernels_against_numpy_with_ties_nan_and_negative_operands(impl):
    x = np.array([[1.0, -7.0, np.nan, 2.0], [3.0, 7.0, -1.5, 0.0]], np.float32)
    y = np.array([2.0, 3.0, 1.0, -0.0], np.float32)
    for op, want in (("broadcast_equal", x == y), ("broadcast_greater_equal", x >= y), ("broadcast_less", x < y),
                     ("broadcast_not_equal", x != y), ("broadcast_logical_and", (x != 0) & (y != 0))):
        got = run_op(op, {"x": [x], "y": [y]}, {}, impl)[0]
        assert got.dtype == np.int8, op
        np.testing.assert_array_equal(got, want.astype(np.int8), err_msg=op)
    # OneFlow's ``x > y ? x : y``: a NaN in x gives y, a NaN in y gives NaN
    np.testing.assert_array_equal(run_op("broadcast_maximum", {"x": [x], "y": [y]}, {}, impl)[0],
                                  np.where(x > y, x, y))
    a = np.array([-7, 7, -7, 7, 5, 0], np.int32)
    b = np.array([3, -3, -3, 3, 0, 4], np.int32)
    np.testing.assert_array_equal(run_op("broadcast_floor_mod", {"x": [a], "y": [b]}, {}, impl)[0],
                                  [2, -2, -1, 1, 0, 0])  # Python's %, x % 0 = 0 as NumPy
    dz, xs, ys = (np.array([1.0, 2.0, 3.0]),) * 1 + (np.array([1.0, 5.0, 2.0]), np.array([1.0, 4.0, 3.0]))
    dx, dy = run_op("elementwise_maximum_backward", {"dz": [dz], "x": [xs], "y": [ys]}, {}, impl)
    np.testing.assert_array_equal(dx, [0, 2, 0])  # a tie goes to y, as OneFlow's kernel
    np.testing.assert_array_equal(dy, [1, 0, 3])


def test_blob_operators_build_the_comparison_ops():
    flow.clear_default_session()

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((3, 4)), b: tp.Numpy.Placeholder((1, 4))) -> tp.Numpy:
        outs = [a == b, a != b, a < b, a <= b, a > b, a >= b, a == 0.5]
        return flow.concat([flow.cast(o, flow.float32) for o in outs] + [a % b], axis=0)

    a = RNG.integers(0, 3, (3, 4)).astype(np.float32) / 2
    b = RNG.integers(1, 3, (1, 4)).astype(np.float32) / 2
    want = [a == b, a != b, a < b, a <= b, a > b, a >= b, a == 0.5, np.mod(a, b)]
    np.testing.assert_array_equal(job(a, b), np.concatenate([np.broadcast_to(w, (3, 4)) for w in want]))


def test_blobs_stay_hashable_and_compare_by_identity_with_other_objects():
    flow.clear_default_session()
    seen = {}

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        seen[a] = 1
        assert a in seen and a != "a" and not (a == None)  # noqa: E711 -- identity, not an op
        return flow.math.maximum(a, a)

    np.testing.assert_array_equal(job(np.array([1.0, 2.0], np.float32)), [1.0, 2.0])


def test_maximum_minimum_gradients_by_finite_differences():
    a, b = v(3, 1, 4), v(2, 1)  # broadcast both sides; distinct values, so no ties
    flow.clear_default_session()
    check({"a": a, "b": b}, lambda bl, f: flow.math.maximum(bl["a"], bl["b"]),
          lambda s, f: np.maximum(s["a"], s["b"]), {}, (3, 2, 4))
    flow.clear_default_session()
    check({"a": v(3, 4), "b": v(3, 4)}, lambda bl, f: flow.math.minimum(bl["a"], bl["b"]),
          lambda s, f: np.minimum(s["a"], s["b"]), {}, (3, 4))


def test_where_and_masked_fill_gradients_by_finite_differences():
    cond = RNG.integers(0, 2, (3, 1, 4)).astype(np.int32)
    flow.clear_default_session()
    check({"a": v(2, 4), "b": v(3, 2, 1)},
          lambda bl, f: flow.where(f["cond"], bl["a"], bl["b"]),
          lambda s, f: np.where(f["cond"], s["a"], s["b"]), {"cond": cond}, (3, 2, 4))
    flow.clear_default_session()
    check({"a": v(2, 4)}, lambda bl, f: flow.masked_fill(bl["a"], f["cond"], -2.5),
          lambda s, f: np.where(f["cond"], -2.5, s["a"]), {"cond": cond}, (3, 2, 4))


def test_two_devices_split_give_one_devices_values():
    def run(devices: int) -> np.ndarray:
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        config = flow.FunctionConfig()
        config.default_placement_scope(flow.scope.placement("cpu", f"0:0-{devices - 1}"))

        @flow.global_function(function_config=config)
        def job(c: tp.Numpy.Placeholder((6, 4), dtype=flow.int32), x: tp.Numpy.Placeholder((6, 4)),
                y: tp.Numpy.Placeholder((6, 1))) -> tp.Numpy:
            m = flow.math.maximum(x, y) + flow.cast(x > y, flow.float32)
            return flow.where(c, m, flow.math.minimum(x, x * 2.0))

        return job(cond, x, y)

    cond = RNG.integers(0, 2, (6, 4)).astype(np.int32)
    x, y = RNG.standard_normal((6, 4)).astype(np.float32), RNG.standard_normal((6, 1)).astype(np.float32)
    want = np.where(cond, np.maximum(x, y) + (x > y), np.minimum(x, 2 * x))
    np.testing.assert_allclose(run(1), want, rtol=1e-6)
    np.testing.assert_allclose(run(2), want, rtol=1e-6)
    flow.config.cpu_device_num(1)


def test_constant_like_and_broadcast_to_compatible_with():
    flow.clear_default_session()

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((3, 1)), b: tp.Numpy.Placeholder((1, 4))) -> tp.Numpy:
        c = flow.constant_like(a, 2.7, dtype=flow.int32)  # an integer dtype truncates, as OneFlow's fill
        return flow.broadcast_to_compatible_with(a, [b]) + flow.cast(flow.broadcast_to_compatible_with(c, [b]),
                                                                      flow.float32)

    a, b = np.arange(3, dtype=np.float32).reshape(3, 1), np.zeros((1, 4), np.float32)
    np.testing.assert_array_equal(job(a, b), np.broadcast_to(a, (3, 4)) + 2)


def test_errors_name_the_problem():
    flow.clear_default_session()

    @flow.global_function()
    def bad_shapes(a: tp.Numpy.Placeholder((3, 4)), b: tp.Numpy.Placeholder((2, 4))) -> tp.Numpy:
        return a < b

    with pytest.raises(OpInferError, match=r"do not broadcast"):
        bad_shapes(np.zeros((3, 4), np.float32), np.zeros((2, 4), np.float32))

    flow.clear_default_session()

    @flow.global_function()
    def float_condition(a: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.where(a, a, a)

    with pytest.raises(OpInferError, match=r"input 'condition' has dtype float32; where accepts int8"):
        float_condition(np.zeros(3, np.float32))

    flow.clear_default_session()

    @flow.global_function()
    def mod_number(a: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.math.mod(a, 2)

    with pytest.raises(NotImplementedError, match=r"flow.math.mod takes two blobs"):
        mod_number(np.zeros(3, np.float32))

    flow.clear_default_session()

    @flow.global_function()
    def int_vs_half(a: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        return a == 0.5

    with pytest.raises(TypeError, match=r"equal of the int32 blob .* and the non-integer 0.5"):
        int_vs_half(np.zeros(3, np.int32))


# -- unary math ops (ops/unary_ops.py) ------------------------------------------------------------------------
_UNARY_FD = [("acos", np.arccos, -0.8, 0.8), ("acosh", np.arccosh, 1.2, 3), ("asin", np.arcsin, -0.8, 0.8),
             ("asinh", np.arcsinh, -2, 2), ("atan", np.arctan, -2, 2), ("atanh", np.arctanh, -0.8, 0.8),
             ("cos", np.cos, -3, 3), ("cosh", np.cosh, -2, 2), ("erf", None, -2, 2), ("erfc", None, -2, 2),
             ("expm1", np.expm1, -2, 2), ("log1p", np.log1p, -0.5, 2),
             ("log_sigmoid", lambda x: -np.log1p(np.exp(-x)), -3, 3),
             ("reciprocal_no_nan", lambda x: 1 / x, 0.5, 2), ("rsqrt", lambda x: 1 / np.sqrt(x), 0.5, 2),
             ("sin", np.sin, -3, 3), ("sinh", np.sinh, -2, 2), ("softplus", lambda x: np.log1p(np.exp(x)), -3, 3),
             ("tan", np.tan, -1.2, 1.2), ("floor", np.floor, -3, 3), ("ceil", np.ceil, -3, 3),
             ("rint", np.rint, -3, 3), ("round", np.rint, -3, 3)]


@pytest.mark.parametrize("name, fn, lo, hi", _UNARY_FD, ids=[u[0] for u in _UNARY_FD])
def test_unary_gradients_by_finite_differences(name, fn, lo, hi):
    from scipy import special

    fn = fn or getattr(special, name)
    x = v(3, 4, low=lo, high=hi)
    if name in ("floor", "ceil", "rint", "round"):
        x = np.round(x) + 0.25  # away from the jumps: the derivative is 0
    flow.clear_default_session()
    check({"x": x}, lambda b, f: getattr(flow.math, name)(b["x"]), lambda s, f: fn(s["x"]), {}, (3, 4),
          rtol=1e-5, atol=1e-7)


def test_unary_special_values_follow_oneflow():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return flow.concat([flow.math.reciprocal_no_nan(x), flow.math.round(x), flow.math.lgamma(x)], axis=0)

    x = np.array([0.0, 2.5, -0.5, 1.0], np.float32)
    np.testing.assert_allclose(job(x), np.concatenate([[0, 0.4, -2, 1], [0, 2, -0.0, 1],
                                                       [np.inf, 0.2846829, 1.2655121, 0]]), rtol=1e-6, atol=1e-7)


def test_lgamma_has_no_gradient_as_in_oneflow():
    flow.clear_default_session()
    with pytest.raises(Exception, match=r"'lgamma' has no gradient rule"):
        check({"x": v(3, low=1, high=2)}, lambda b, f: flow.math.lgamma(b["x"]), None, {}, (3,))
