"""Initial values pinned for a seed: moving or restructuring the initializer kernel must not change one bit of
what a variable starts from (a changed value changes every training run's numbers)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import flowlab as flow
from flowlab.ir.dtype import float32, float64, int32
from flowlab.kernels.initializers import initialize

# (conf, shape, dtype) -> the first 16 hex digits of sha256 over the values' bytes, drawn with seed 7
PINNED = [
    (flow.constant_initializer(2.5), (3, 4), float32, "a50d92e334c5841f"),
    (flow.constant_initializer(3, dtype=flow.int32), (3, 4), int32, "b886a876a05d9128"),
    (flow.random_uniform_initializer(-3, 1), (3, 4), float32, "b002f81d5177310a"),
    (flow.random_uniform_initializer(-3, 7, dtype=flow.int32), (3, 4), int32, "315b38e0ab1a97bf"),
    (flow.random_normal_initializer(0.5, 2.0), (3, 4), float64, "d858fa1d84bc4424"),
    (flow.truncated_normal(0.1), (20, 30), float32, "c6565e194d53725c"),
    (flow.variance_scaling_initializer(2.0, "fan_out"), (8, 3, 3, 3), float32, "cde8a4e16030f5c4"),
    (flow.variance_scaling_initializer(1.0, "fan_in", "random_normal", "NHWC"), (8, 3, 3, 4), float32,
     "cc16817b0ffce191"),
    (flow.xavier_uniform_initializer(), (30, 20), float32, "59f8eaac103c8b7b"),
    (flow.kaiming_initializer((16, 4, 3, 3)), (16, 4, 3, 3), float32, "268a401d96cdaff0"),
    ({"type": "xavier_uniform", "data_format": ""}, (30, 20), float32, "59f8eaac103c8b7b"),  # an older dict
]


@pytest.mark.parametrize(("conf", "shape", "dtype", "digest"), PINNED, ids=[str(p[0]["type"]) for p in PINNED])
def test_initial_values_are_pinned_for_a_seed(conf, shape, dtype, digest):
    values = initialize(conf, shape, dtype, 7)
    assert values.shape == shape and values.dtype == dtype.np
    assert hashlib.sha256(values.tobytes()).hexdigest()[:16] == digest


def test_uniform_and_normal_are_numpys_pcg64_draws():
    """Independent of the pins: the documented stream, PCG64(seed), drawn the way NumPy draws it."""
    rng = np.random.Generator(np.random.PCG64(7))
    expect = rng.uniform(-3.0, 1.0, (3, 4)).astype(np.float32)
    np.testing.assert_array_equal(initialize(flow.random_uniform_initializer(-3, 1), (3, 4), float32, 7), expect)
    rng = np.random.Generator(np.random.PCG64(7))
    expect64 = rng.normal(0.5, 2.0, (3, 4))
    np.testing.assert_array_equal(initialize(flow.random_normal_initializer(0.5, 2.0), (3, 4), float64, 7), expect64)
