"""Initializers: the statistics each promises, bounds, determinism, and OneFlow's fan conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowlab as flow
from flowlab.ir.dtype import float32, float64
from flowlab.ops.initializers import fans, initialize

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
