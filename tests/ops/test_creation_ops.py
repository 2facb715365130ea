"""zeros, ones, range, stack, reverse, broadcast_like, tril and fused_scale_tril (ops/creation_ops.py): values
against NumPy, gradients against finite differences, a 2-device split against one device, the errors. (CUDA kernels
and dtypes: op_samples.py's suites; OneFlow's own tests: tests/oneflow/.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError
from tests.helpers.gradients import check, v


def test_values_against_numpy():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3, 4))) -> tp.Numpy:
        r = flow.cast(flow.range(2, 26, 1, dtype=flow.int32), flow.float32)
        parts = [flow.reverse(x, [0, -1]), flow.math.tril(x, -1, fill_value=9.5),
                 flow.math.fused_scale_tril(x, 1, fill_value=-1.0, scale=2.0), flow.reshape(r, (2, 3, 4)),
                 flow.zeros((2, 3, 4)) + flow.ones((2, 3, 4), dtype=flow.float32)]
        return flow.stack(parts, axis=1)

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    keep_low, keep_up = np.tril(np.ones((3, 4), bool), -1), np.tril(np.ones((3, 4), bool), 1)
    want = [x[::-1, :, ::-1], np.where(keep_low, x, 9.5), np.where(keep_up, 2 * x, -1),
            np.arange(2, 26, dtype=np.float32).reshape(2, 3, 4), np.ones((2, 3, 4))]
    np.testing.assert_array_equal(job(x), np.stack(want, axis=1))


def test_range_forms():
    flow.clear_default_session()

    @flow.global_function()
    def job() -> tp.Numpy:
        return flow.concat([flow.range(5, dtype=flow.int64), flow.range(1, 10, 3, dtype=flow.int64)], axis=0)

    np.testing.assert_array_equal(job(), [0, 1, 2, 3, 4, 1, 4, 7])


def test_gradients_by_finite_differences():
    for build, fn in (
            (lambda b: flow.reverse(b["x"], 1), lambda x: x[:, ::-1]),
            (lambda b: flow.math.tril(b["x"], 0, fill_value=3.0), lambda x: np.where(np.tril(np.ones((3, 3))), x, 3)),
            (lambda b: flow.math.fused_scale_tril(b["x"], -1, scale=1.5),
             lambda x: np.where(np.tril(np.ones((3, 3)), -1), 1.5 * x, 0)),
            (lambda b: flow.stack([b["x"], b["x"] * 2.0], axis=2), lambda x: np.stack([x, 2 * x], axis=2))):
        flow.clear_default_session()
        out = fn(np.zeros((3, 3))).shape
        check({"x": v(3, 3)}, lambda bl, f, build=build: build(bl), lambda s, f, fn=fn: fn(s["x"]), {}, out)


def test_two_devices_split_off_the_triangle():
    def run(devices: int) -> np.ndarray:
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        config = flow.FunctionConfig()
        config.default_placement_scope(flow.scope.placement("cpu", f"0:0-{devices - 1}"))

        @flow.global_function(function_config=config)
        def job(x: tp.Numpy.Placeholder((4, 3, 3))) -> tp.Numpy:
            return flow.math.tril(flow.reverse(x, 2), 0)

        return job(x)

    x = np.arange(36, dtype=np.float32).reshape(4, 3, 3)
    want = np.where(np.tril(np.ones((3, 3), bool)), x[:, :, ::-1], 0)
    np.testing.assert_array_equal(run(1), want)
    np.testing.assert_array_equal(run(2), want)
    flow.config.cpu_device_num(1)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="Please specified data type"):
        flow.range(3)
    flow.clear_default_session()

    @flow.global_function()
    def flat(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return flow.math.tril(x)

    with pytest.raises(OpInferError, match=r"tril needs a blob of 2 or more axes"):
        flat(np.zeros(4, np.float32))
