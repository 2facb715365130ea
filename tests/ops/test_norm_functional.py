"""flow.nn.moments, flow.math.reduce_variance, flow.nn.batch_normalization and flow.layers.layer_norm (built of
existing ops as OneFlow v0.3.4 builds them on the CPU): forward against NumPy in float64, gradients against
finite differences, OneFlow's docstring examples, a 2-device layer_norm against one device, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError
from tests.helpers.gradients import check, v

RNG = np.random.default_rng(31)


def _np_layer_norm(x: np.ndarray, begin: int, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    axes = tuple(range(begin % x.ndim, x.ndim))
    mean = x.mean(axes, keepdims=True)
    var = (x * x).mean(axes, keepdims=True) - mean * mean
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def test_docstring_examples_of_moments_and_batch_normalization():
    flow.clear_default_session()

    @flow.global_function()
    def moments_Job(x: tp.Numpy.Placeholder((5,))) -> tuple[tp.Numpy, tp.Numpy]:
        return flow.nn.moments(x, axes=[0])

    @flow.global_function()
    def batch_norm_Job(x: tp.Numpy.Placeholder((1, 5))) -> tp.Numpy:
        bn_mean, bn_variance = flow.nn.moments(x, axes=[1])
        return flow.nn.batch_normalization(x, mean=bn_mean, variance=bn_variance, axis=0)

    mean, variance = moments_Job(np.array([1, 2, 3, 4, 5], np.float32))
    np.testing.assert_allclose(mean, [3.0])
    np.testing.assert_allclose(variance, [2.0])
    out = batch_norm_Job(np.array([[1, 2, 3, 4, 5]], np.float32))
    np.testing.assert_allclose(out, [[-1.41421, -0.707105, 0.0, 0.707105, 1.41421]], rtol=1e-5)


def test_batch_normalization_forward_and_gradients_of_every_input():
    x, mean, var, scale, offset = v(2, 3, 4), v(3), v(3, low=0.5, high=2), v(3), v(3)

    def build(b, f):
        return flow.nn.batch_normalization(b["x"], b["mean"], b["var"], offset=b["offset"], scale=b["scale"],
                                           variance_epsilon=1e-3, axis=1)

    def forward(s, f):
        shape = (1, 3, 1)
        return ((s["x"] - s["mean"].reshape(shape)) / np.sqrt(s["var"].reshape(shape) + 1e-3)
                * s["scale"].reshape(shape) + s["offset"].reshape(shape))

    check({"x": x, "mean": mean, "var": var, "scale": scale, "offset": offset}, build, forward, {}, (2, 3, 4))


@pytest.mark.parametrize("begin_norm_axis, begin_params_axis", [(-1, -1), (1, -1), (1, 1)])
def test_layer_norm_forward_with_loaded_gamma_and_beta(begin_norm_axis, begin_params_axis):
    flow.clear_default_session()
    shape = (3, 4, 5)

    @flow.global_function()
    def layer_norm_Job(x: tp.Numpy.Placeholder(shape, dtype=flow.float64)) -> tp.Numpy:
        return flow.layers.layer_norm(x, name="LayerNorm", begin_norm_axis=begin_norm_axis,
                                      begin_params_axis=begin_params_axis, epsilon=1e-5)

    x = RNG.standard_normal(shape) * 3 + 1
    params = shape[begin_params_axis:]
    gamma, beta = RNG.standard_normal(params), RNG.standard_normal(params)
    flow.load_variables({"LayerNorm-gamma": gamma, "LayerNorm-beta": beta}, ignore_mismatch=False)
    np.testing.assert_allclose(layer_norm_Job(x), _np_layer_norm(x, begin_norm_axis, gamma, beta, 1e-5),
                               rtol=1e-9, atol=1e-12)
    names = set(flow.get_all_variables())
    assert names == {"LayerNorm-gamma", "LayerNorm-beta"}


def test_layer_norm_gradients_of_the_input_gamma_and_beta():
    x, gamma, beta = v(3, 6), v(6, low=0.5, high=1.5), v(6)

    def build(b, f):  # the job's get_variable makes LayerNorm-gamma/-beta first; layer_norm finds them
        return flow.layers.layer_norm(b["x"], begin_norm_axis=-1, begin_params_axis=-1)

    def forward(s, f):
        return _np_layer_norm(s["x"], -1, s["LayerNorm-gamma"], s["LayerNorm-beta"], 1e-5)

    check({"x": x, "LayerNorm-gamma": gamma, "LayerNorm-beta": beta}, build, forward, {}, (3, 6),
          rtol=1e-5, atol=1e-7)


def test_layer_norm_split_on_two_devices_equals_one_device():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    results = []
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)

        @flow.global_function()
        def layer_norm_2(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
            return flow.layers.layer_norm(x, begin_norm_axis=-1)

        results.append(layer_norm_2(x))
        if devices == 2:
            sigs = flow.default_session().job_set.job("layer_norm_2").sbp_signatures
            assert all("S(0)" in str(s) for n, s in sigs.items() if n.startswith(("reduce_mean", "broadcast_sub")))
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results[0], _np_layer_norm(x.astype(np.float64), -1, 1.0, 0.0, 1e-5), rtol=1e-4,
                               atol=1e-5)


def test_bad_input_is_an_error_at_the_users_line():
    flow.clear_default_session()

    @flow.global_function()
    def bad_mean(x: tp.Numpy.Placeholder((2, 3)), m: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return flow.nn.batch_normalization(x, m, m, axis=1)

    with pytest.raises(OpInferError, match=r"test_norm_functional.py:\d+: batch_normalization: mean must have 3 "
                                           r"elements \(axis 1 of x f32\[2,3\]\); got f32\[2\]"):
        bad_mean(np.zeros((2, 3), np.float32), np.zeros(2, np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def bad_axis(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.layers.layer_norm(x, begin_norm_axis=2)

    with pytest.raises(OpInferError, match=r"layer_norm: begin_norm_axis 2 is out of range for f32\[2,3\]"):
        bad_axis(np.zeros((2, 3), np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def tuple_axes(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.nn.moments(x, axes=(1,))[0]

    with pytest.raises(OpInferError, match=r"moments: axes must be a list of ints; got \(1,\)"):
        tuple_axes(np.zeros((2, 3), np.float32))
