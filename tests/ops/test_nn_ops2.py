"""OneFlow v0.3.4's further nn functions (activations, losses, norms, shape ops, convolutions: flowlab/ops/*2.py):
values against NumPy float64 definitions written here, gradients against central finite differences (through the
real autograd pass, tests/test_gradients.check), both kernel tiers, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow

from ..test_gradients import check, v
from .helpers import run_op

RNG = np.random.default_rng(23)
IMPLS = ["reference", "numba"]


def _softplus(x):
    return np.log1p(np.exp(x))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _logsoftmax(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


# (name, flowlab function, NumPy float64 definition); inputs keep away from the kinks at -3, 3, 0, +-1
ACTS = [
    ("elu", lambda x: flow.nn.elu(x, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * (np.exp(x) - 1))),
    ("hardsigmoid", flow.nn.hardsigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    ("hardswish", flow.nn.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hardtanh", lambda x: flow.nn.hardtanh(x, -2.0, 2.5), lambda x: np.clip(x, -2.0, 2.5)),
    ("relu6", flow.nn.relu6, lambda x: np.clip(x, 0, 6)),
    ("swish", lambda x: flow.nn.swish(x, beta=0.7), lambda x: x * _sigmoid(0.7 * x)),
    ("mish", flow.nn.mish, lambda x: x * np.tanh(_softplus(x))),
    ("logsoftmax", lambda x: flow.nn.logsoftmax(x, axis=0), lambda x: _logsoftmax(x, 0)),
]


def _away_from_kinks(shape):
    x = v(*shape, low=-5.0, high=7.0)
    for k in (-3.0, -2.0, 0.0, 2.5, 3.0, 6.0):
        x = np.where(np.abs(x - k) < 0.05, x + 0.1, x)
    return x


@pytest.mark.parametrize("name, op, fn", ACTS, ids=[a[0] for a in ACTS])
def test_activation_gradients_by_finite_differences(name, op, fn):
    x = _away_from_kinks((4, 6))
    check({"x": x}, lambda b, f: op(b["x"]), lambda s, f: fn(s["x"]), {}, (4, 6))


@pytest.mark.parametrize("impl", IMPLS)
def test_activation_kernels_at_the_branch_points(impl):
    # OneFlow's kernels: the comparisons at the bounds are <= -3 / >= 3 (forward), open (-3, 3) for the gradients
    x = np.array([-4.0, -3.0, -1.0, 0.0, 1.0, 3.0, 4.0], np.float32)
    dy = np.full_like(x, 2.0)
    np.testing.assert_allclose(run_op("hardsigmoid", {"x": [x]}, {}, impl)[0], [0, 0, 1 / 3, 0.5, 2 / 3, 1, 1],
                               rtol=1e-6)
    np.testing.assert_allclose(run_op("hardsigmoid_grad", {"x": [x], "dy": [dy]}, {}, impl)[0],
                               [0, 0, 1 / 3, 1 / 3, 1 / 3, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(run_op("hardswish", {"x": [x]}, {}, impl)[0], [0, 0, -1 / 3, 0, 2 / 3, 3, 4],
                               rtol=1e-6)
    np.testing.assert_allclose(run_op("hardswish_grad", {"x": [x], "dy": [dy]}, {}, impl)[0],
                               [0, 0, 1 / 3, 1, 5 / 3, 2, 2], rtol=1e-6)
    y = run_op("hardtanh", {"x": [x]}, {"min_val": -1.0, "max_val": 0.1}, impl)[0]
    np.testing.assert_array_equal(y, np.float32([-1, -1, -1, 0, 0.1, 0.1, 0.1]))
    # y on a bound (0.1 rounded to float32 by the forward) has no gradient: the bound is compared in float32
    np.testing.assert_array_equal(run_op("hardtanh_grad", {"y": [y], "dy": [dy]}, {"min_val": -1.0, "max_val": 0.1},
                                         impl)[0], [0, 0, 0, 2, 0, 0, 0])
    np.testing.assert_allclose(run_op("elu", {"x": [x]}, {"alpha": 2.0}, impl)[0],
                               np.where(x > 0, x, 2 * np.expm1(x.astype(np.float64))), rtol=1e-6)


def test_hardtanh_bounds_must_be_ordered():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: flow.typing.Numpy.Placeholder((3,))):
        return flow.nn.hardtanh(x, min_val=1.0, max_val=1.0)

    with pytest.raises(ValueError, match="max_val should be larger than min_val"):
        job(np.zeros(3, np.float32))
