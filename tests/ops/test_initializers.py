"""Initializers: the statistics each promises, bounds, determinism, and OneFlow's fan conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowlab as flow
from flowlab.ir.dtype import float32, float64
from flowlab.ir.initializer import fans
from flowlab.kernels.initializers import initialize

SHAPE = (200, 300)


def test_constant_zeros_ones():
    assert np.all(initialize(flow.constant_initializer(2.5), (3, 4), float32, 0) == 2.5)
    assert np.all(initialize(flow.zeros_initializer(), (5,), float32, 0) == 0)
    assert np.all(initialize(flow.ones_initializer(), (5,), float64, 0) == 1)


def test_random_uniform_bounds_and_moments():
    v = initialize(flow.random_uniform_initializer(-3, 1), SHAPE, float32, 1)
    assert v.dtype == np.float32 and v.min() >= -3 and v.max() < 1
    assert v.mean() == pytest.approx(-1.0, abs=0.02)
    assert v.std() == pytest.approx(4 / math.sqrt(12), rel=0.02)


def test_random_normal_moments():
    v = initialize(flow.random_normal_initializer(mean=0.5, stddev=2.0), SHAPE, float64, 2)
    assert v.mean() == pytest.approx(0.5, abs=0.02) and v.std() == pytest.approx(2.0, rel=0.02)


def test_truncated_normal_is_cut_at_two_sigma():
    v = initialize(flow.truncated_normal(0.1), SHAPE, float32, 3)
    assert np.abs(v).max() <= 0.2 + 1e-7
    # A standard normal truncated to [-2, 2] has std 0.8796 (so 0.1 * 0.8796 here).
    assert v.std() == pytest.approx(0.1 * 0.8796, rel=0.02) and abs(v.mean()) < 0.002


def test_xavier_uniform_limit_uses_fans():
    assert fans((512, 784)) == (784.0, 512.0)  # a dense weight is (units, in)
    assert fans((32, 3, 5, 5)) == (75.0, 800.0)  # conv (out, in, kh, kw), NCHW
    v = initialize(flow.xavier_uniform_initializer(), (512, 784), float32, 4)
    limit = math.sqrt(6 / (784 + 512))
    assert v.max() <= limit and v.min() >= -limit and v.max() > 0.99 * limit


def test_seeded_and_deterministic():
    a = initialize(flow.truncated_normal(1.0), (50,), float32, 11)
    np.testing.assert_array_equal(a, initialize(flow.truncated_normal(1.0), (50,), float32, 11))
    assert not np.array_equal(a, initialize(flow.truncated_normal(1.0), (50,), float32, 12))


def test_bad_initializer_arguments():
    with pytest.raises(ValueError, match="minval <= maxval"):
        flow.random_uniform_initializer(2, 1)
    with pytest.raises(ValueError, match="unknown initializer type 'nope'"):
        initialize({"type": "nope"}, (2,), float32, 0)


def test_xavier_is_variance_scaling_with_fan_avg_as_in_oneflow():
    assert flow.xavier_uniform_initializer("NCHW") == {
        "type": "variance_scaling", "scale": 1.0, "variance_norm": "fan_avg", "distribution": "random_uniform",
        "data_format": "channels_first"}
    assert flow.glorot_uniform_initializer() == flow.xavier_uniform_initializer()
    # The dict older flowlab versions stored still initializes, to the same values.
    old = initialize({"type": "xavier_uniform", "data_format": ""}, (30, 20), float32, 5)
    np.testing.assert_array_equal(old, initialize(flow.xavier_uniform_initializer(), (30, 20), float32, 5))


def test_xavier_normal_std():
    v = initialize(flow.xavier_normal_initializer(), (400, 600), float64, 6)
    assert v.std() == pytest.approx(math.sqrt(2 / 1000), rel=0.02) and abs(v.mean()) < 0.002


@pytest.mark.parametrize("mode, n", [("fan_in", 300), ("fan_out", 200), ("fan_avg", 250)])
def test_variance_scaling_truncated_normal_keeps_the_variance(mode, n):
    v = initialize(flow.variance_scaling_initializer(2.0, mode), SHAPE, float64, 7)
    std = math.sqrt(2.0 / n)
    assert v.std() == pytest.approx(std, rel=0.02)  # the truncation is compensated (/ 0.8796)
    assert np.abs(v).max() < 2 * std / 0.87962566103423978


def test_variance_scaling_uniform_limit():
    v = initialize(flow.variance_scaling_initializer(3.0, "fan_in", "random_uniform"), SHAPE, float64, 8)
    limit = math.sqrt(3 * 3.0 / 300)
    assert v.max() <= limit and v.min() >= -limit and v.max() > 0.99 * limit


def test_fans_follow_oneflow_data_formats():
    assert fans((8, 4, 3, 3), "NCHW") == (36.0, 72.0)  # (out, in, kh, kw)
    assert fans((8, 3, 3, 4), "NHWC") == (36.0, 72.0)  # (out, kh, kw, in)
    assert fans((8, 4, 5), "NCW") == (20.0, 40.0)
    assert fans((6,)) == (1.0, 6.0)  # OneFlow: fan_in = product of all but axis 0


def test_kaiming_initializer_returns_a_scaled_normal_or_uniform():
    conf = flow.kaiming_initializer((64, 32, 3, 3), nonlinearity="relu")
    assert conf == {"type": "random_normal", "mean": 0.0, "std": pytest.approx(math.sqrt(2) / math.sqrt(288))}
    uni = flow.kaiming_initializer((10, 40), distribution="random_uniform", mode="fan_out", nonlinearity=None)
    assert uni["type"] == "random_uniform" and uni["max"] == pytest.approx(math.sqrt(3) / math.sqrt(10))
    leaky = flow.kaiming_initializer((10, 40))  # leaky_relu with slope 0: the relu gain
    assert leaky["std"] == pytest.approx(math.sqrt(2) / math.sqrt(40))


def test_integer_dtypes_get_integer_initializers():
    assert flow.constant_initializer(3, dtype=flow.int32) == {"type": "constant_int", "value": 3}
    v = initialize(flow.random_uniform_initializer(0, 10, dtype=flow.int64), (1000,), flow.int64, 9)
    assert v.dtype == np.int64 and v.min() == 0 and v.max() == 9
    big = initialize(flow.constant_initializer(2**53 + 1, dtype=flow.int64), (2,), flow.int64, 0)
    assert big.tolist() == [2**53 + 1] * 2


@pytest.mark.parametrize("make, words", [
    (lambda: flow.variance_scaling_initializer(mode="fan_sum"), "mode must be one of ('fan_in', 'fan_out'"),
    (lambda: flow.variance_scaling_initializer(distribution="cauchy"), "distribution must be one of"),
    (lambda: flow.variance_scaling_initializer(scale=0), "scale > 0; got 0"),
    (lambda: flow.xavier_uniform_initializer("HWC"), "data_format must be 'NC...'"),
    (lambda: flow.truncated_normal(-0.1), "stddev >= 0; got -0.1"),
    (lambda: flow.random_normal_initializer(stddev=-1), "stddev >= 0; got -1"),
    (lambda: flow.kaiming_initializer((5,)), "rank >= 2"),
    (lambda: flow.kaiming_initializer((5, 5), nonlinearity="swish"), "unsupported nonlinearity 'swish'"),
])
def test_bad_initializer_arguments_say_what_is_expected(make, words):
    with pytest.raises(ValueError) as err:
        make()
    assert words in str(err.value)
