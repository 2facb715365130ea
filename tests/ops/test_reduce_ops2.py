"""reduce_min/prod/all/any and the composite reductions (ops/reduce_ops.py): gradients against finite
differences, a 2-device run of the kept-axis split against one device, NaN and integer wrapping in both CPU
kernels. (CUDA kernels and dtypes: op_samples.py's suites; OneFlow's own test: tests/oneflow/test_reduce_ops.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.gradients import check, v

from .helpers import run_op

_FD = [("reduce_min", lambda x: np.min(x, axis=1)), ("reduce_std", lambda x: np.std(x, axis=1)),
       ("reduce_logsumexp", lambda x: np.log(np.sum(np.exp(x), axis=1))),
       ("reduce_euclidean_norm", lambda x: np.sqrt(np.sum(x * x, axis=1)))]


@pytest.mark.parametrize("name, fn", _FD, ids=[f[0] for f in _FD])
def test_gradients_by_finite_differences(name, fn):
    flow.clear_default_session()
    check({"x": v(3, 5, 2)}, lambda b, f: getattr(flow.math, name)(b["x"], axis=1), lambda s, f: fn(s["x"]), {},
          (3, 2), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_nan_and_integer_wrapping(impl):
    x = np.array([[1.0, np.nan, -2.0], [3.0, 0.5, 2.0]])
    attrs = {"axis": (1,), "keepdims": False}
    np.testing.assert_array_equal(run_op("reduce_min", {"input_tensor": [x]}, attrs, impl)[0], [np.nan, 0.5])
    np.testing.assert_array_equal(run_op("reduce_any", {"input_tensor": [x]}, attrs, impl)[0], [1, 1])
    np.testing.assert_array_equal(run_op("reduce_all", {"input_tensor": [np.array([[1, 0], [2, 3]], np.int8)]},
                                         attrs, impl)[0], [0, 1])
    big = np.array([[100, 100, 3]], np.int8)  # 30000 wraps in int8, as NumPy's product cast down
    np.testing.assert_array_equal(run_op("reduce_prod", {"input_tensor": [big]}, attrs, impl)[0],
                                  np.array([30000]).astype(np.int8))


def test_two_devices_split_on_a_kept_axis():
    def run(devices: int) -> np.ndarray:
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        config = flow.FunctionConfig()
        config.default_placement_scope(flow.scope.placement("cpu", f"0:0-{devices - 1}"))

        @flow.global_function(function_config=config)
        def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
            return flow.concat([flow.math.reduce_prod(x, axis=1), flow.math.reduce_min(x, axis=1),
                                flow.cast(flow.math.reduce_any(x, axis=1), flow.float32)], axis=0)

        return job(x)

    x = np.array([[1, 2, 3], [0, 1, 5], [-1, 2, 2], [0.5, 4, 1]], np.float32)
    want = np.concatenate([x.prod(1), x.min(1), (x != 0).any(1)])
    np.testing.assert_allclose(run(1), want)
    np.testing.assert_allclose(run(2), want)
    flow.config.cpu_device_num(1)


def test_unsorted_segment_sum_gradient_by_finite_differences():
    ids = np.array([[0, 3], [3, 1]], np.int32)

    def forward(s, f):
        out = np.zeros((2, 4, 3))
        for (i, j), k in np.ndenumerate(f["ids"]):
            out[:, k] += s["x"][:, i, j]
        return out

    flow.clear_default_session()
    check({"x": v(2, 2, 2, 3)}, lambda b, f: flow.math.unsorted_segment_sum(b["x"], f["ids"], 4, axis=1), forward,
          {"ids": ids}, (2, 4, 3))
