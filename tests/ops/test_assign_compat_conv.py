"""flow.assign (the variable takes the value, after the job's earlier readers of it) and flow.nn.compat_conv2d
(conv2d with the padding string in any case), as OneFlow's models/test_dqn.py uses them."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError


def test_assign_writes_the_variable_after_its_readers():
    @flow.global_function()
    def copy_job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        a = flow.get_variable("a", shape=(3,), initializer=flow.constant_initializer(1.0))
        b = flow.get_variable("b", shape=(3,), initializer=flow.constant_initializer(2.0))
        before = a + 0  # reads a before the assign: sees the old value
        flow.assign(a, b + x)
        return before

    out = copy_job(np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(out, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(flow.get_all_variables()["a"], [3.0, 4.0, 5.0])


def test_assign_to_a_non_variable_is_an_error():
    @flow.global_function()
    def bad(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        flow.assign(x, x)
        return x

    with pytest.raises(OpInferError, match="assign writes a variable in place"):
        bad(np.zeros(3, np.float32))


def test_compat_conv2d_is_conv2d():
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((2, 3, 6, 6)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)

    @flow.global_function()
    def convs(a: tp.Numpy.Placeholder((2, 3, 6, 6)), k: tp.Numpy.Placeholder((4, 3, 3, 3))
              ) -> tuple[tp.Numpy, tp.Numpy]:
        return (flow.nn.compat_conv2d(a, k, strides=[1, 1], padding="same", data_format="NCHW"),
                flow.nn.conv2d(a, k, strides=1, padding="SAME"))

    compat, plain = convs(x, w)
    assert compat.shape == (2, 4, 6, 6)
    np.testing.assert_array_equal(compat, plain)
