"""pow, atan2, floordiv, xdivy, xlogy, scalar_pow and clip_by_value (ops/binary_ops.py): gradients against finite
differences, OneFlow's special cases (x = 0 in xdivy/xlogy, pow's y-gradient at x <= 0, clip ends), and the errors.
(CUDA kernels and dtypes: op_samples.py's suites; OneFlow's own tests: tests/oneflow/.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError
from tests.helpers.gradients import check, v

from .helpers import run_op

_BINARY = [("pow", np.power, (0.5, 2), (-1.5, 2)), ("atan2", np.arctan2, (-2, 2), (0.5, 2)),
           ("xdivy", lambda x, y: x / y, (-2, 2), (0.5, 2)), ("xlogy", lambda x, y: x * np.log(y), (-2, 2), (0.5, 2))]


@pytest.mark.parametrize("name, fn, xr, yr", _BINARY, ids=[b[0] for b in _BINARY])
def test_binary_gradients_by_finite_differences(name, fn, xr, yr):
    flow.clear_default_session()
    check({"a": v(3, 4, low=xr[0], high=xr[1]), "b": v(3, 4, low=yr[0], high=yr[1])},
          lambda bl, f: getattr(flow.math, name)(bl["a"], bl["b"]), lambda s, f: fn(s["a"], s["b"]), {}, (3, 4),
          rtol=1e-5, atol=1e-7)


def test_scalar_pow_and_clip_gradients_by_finite_differences():
    flow.clear_default_session()
    check({"a": v(3, 4, low=0.5, high=2)}, lambda bl, f: flow.math.pow(bl["a"], 2.5), lambda s, f: s["a"] ** 2.5,
          {}, (3, 4), rtol=1e-5)
    x = v(4, 5, low=-2, high=2)
    x[np.abs(np.abs(x) - 1) < 0.01] = 0.5  # away from the kinks
    flow.clear_default_session()
    check({"a": x}, lambda bl, f: flow.clip_by_value(bl["a"], -1, 1), lambda s, f: np.clip(s["a"], -1, 1), {},
          (4, 5))


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_oneflows_special_cases(impl):
    x, y, dz = np.array([0.0, 2.0, -1.0, 0.0]), np.array([0.0, 4.0, 3.0, -1.0]), np.array([1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(run_op("xdivy", {"x": [x], "y": [y]}, {}, impl)[0], [0, 0.5, -1 / 3, 0])
    np.testing.assert_array_equal(run_op("xlogy", {"x": [x], "y": [y]}, {}, impl)[0], [0, 2 * np.log(4), -np.log(3), 0])
    np.testing.assert_array_equal(run_op("xdivy_x_grad", {"x": [x], "y": [y], "dz": [dz]}, {}, impl)[0],
                                  [0, 0.25, 1 / 3, 0])
    # pow's y-gradient is 0 where x <= 0 (OneFlow's PowFunctor)
    np.testing.assert_allclose(run_op("pow_y_grad", {"x": [x], "y": [y], "dz": [dz]}, {}, impl)[0],
                               [0, np.log(2) * 16, 0, 0])
    np.testing.assert_array_equal(run_op("floordiv", {"x": [np.array([-7.0, 7.0])], "y": [np.array([2.0, -2.0])]},
                                         {}, impl)[0], [-4, -4])
    attrs = {"floating_min": -1.0, "integral_min": -1, "floating_max": 1.0, "integral_max": 1}
    c = np.array([-2.0, -1.0, 0.3, 1.0, 2.0])
    np.testing.assert_array_equal(run_op("clip_by_scalar", {"x": [c]}, attrs, impl)[0], [-1, -1, 0.3, 1, 1])
    np.testing.assert_array_equal(run_op("clip_by_scalar_grad", {"dy": [np.ones(5)], "x": [c]}, attrs, impl)[0],
                                  [0, 1, 1, 1, 0])  # the ends pass the gradient
    i = np.array([-5, 0, 5], np.int32)
    np.testing.assert_array_equal(run_op("clip_by_scalar_max", {"x": [i]}, {"floating_max": 2.7, "integral_max": 2},
                                         impl)[0], [-5, 0, 2])  # an integer blob takes the integral bound


def test_errors_name_the_problem():
    flow.clear_default_session()

    @flow.global_function()
    def bad(a: tp.Numpy.Placeholder((3, 4)), b: tp.Numpy.Placeholder((1, 4))) -> tp.Numpy:
        return flow.math.pow(a, b)

    with pytest.raises(OpInferError, match=r"must have the same shape"):
        bad(np.ones((3, 4), np.float32), np.ones((1, 4), np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def no_bounds(a: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.clip_by_value(a)

    with pytest.raises(ValueError, match=r"cannot be None at the same time"):
        no_bounds(np.ones(3, np.float32))
