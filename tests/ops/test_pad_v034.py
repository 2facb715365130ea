"""`flow.reflection_pad2d` with a padding list, as OneFlow v0.3.4's `ops/pad.py` reads it.

v0.3.4 builds the op's attr as ``[0, 0, padding[2], padding[3]]`` and its kernel pads the height by ``padding[2]``
and the width by ``padding[3]``, each on both sides; ``padding[0]`` and ``padding[1]`` are not used (v0.4.0 changed
the list to ``[left, right, top, bottom]``). References: np.pad in float64 and the docstring's printed example.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import FlowlabError
from tests.helpers.gradients import flowlab_grads

# OneFlow v0.3.4 ops/pad.py docstring: a (1, 2, 3, 3) input padded with [0, 0, 1, 2] gives (1, 2, 5, 7).
DOC_OUT = np.array([[[[5, 4, 3, 4, 5, 4, 3], [2, 1, 0, 1, 2, 1, 0], [5, 4, 3, 4, 5, 4, 3], [8, 7, 6, 7, 8, 7, 6],
                      [5, 4, 3, 4, 5, 4, 3]],
                     [[14, 13, 12, 13, 14, 13, 12], [11, 10, 9, 10, 11, 10, 9], [14, 13, 12, 13, 14, 13, 12],
                      [17, 16, 15, 16, 17, 16, 15], [14, 13, 12, 13, 14, 13, 12]]]], np.float32)


def test_docstring_example_of_oneflow_v034():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((1, 2, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=[0, 0, 1, 2])

    out = pad_Job(np.arange(18).reshape((1, 2, 3, 3)).astype(np.float32))
    assert out.shape == (1, 2, 5, 7)
    np.testing.assert_array_equal(out, DOC_OUT)


def _np_reflect(x: np.ndarray, h: int, w: int) -> np.ndarray:
    return np.pad(x, ((0, 0), (0, 0), (h, h), (w, w)), mode="reflect")


def _np_reflect_grad(shape: tuple[int, ...], h: int, w: int, dy: np.ndarray) -> np.ndarray:
    # Which input cell each output cell copies (np.pad of the cell indices), then scatter-add dy onto it.
    source = _np_reflect(np.arange(int(np.prod(shape))).reshape(shape), h, w)
    dx = np.zeros(int(np.prod(shape)))
    np.add.at(dx, source.ravel(), dy.ravel())
    return dx.reshape(shape)


@pytest.mark.parametrize("padding", [[0, 0, 2, 1], [0, 0, 0, 3], [0, 0, 1, 0], 2])
def test_value_and_gradient_match_numpy(padding):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    h, w = (padding, padding) if isinstance(padding, int) else (padding[2], padding[3])
    weight = np.random.default_rng(1).standard_normal(_np_reflect(x, h, w).shape)

    def build(v, f):
        return flow.reflection_pad2d(v["x"], padding=padding)

    grads = flowlab_grads({"x": x}, build, {"weight": weight})
    np.testing.assert_allclose(grads["x"], _np_reflect_grad(x.shape, h, w, weight), rtol=1e-12, atol=1e-12)

    flow.clear_default_session()

    @flow.global_function()
    def fwd(a: tp.Numpy.Placeholder(x.shape, dtype=flow.float64)) -> tp.Numpy:
        return flow.reflection_pad2d(a, padding=padding)

    np.testing.assert_array_equal(fwd(x), _np_reflect(x, h, w))


def test_unused_leading_entries_are_ignored_with_a_warning():
    # OneFlow v0.3.4 drops padding[0] and padding[1]; a v0.4-style [left, right, top, bottom] list is likely meant.
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1, 1, 3, 4))) -> tp.Numpy:
        with pytest.warns(UserWarning, match=r"padding\[0\] and padding\[1\]"):
            return flow.reflection_pad2d(x, padding=[1, 2, 1, 1])

    x = np.arange(12, dtype=np.float32).reshape((1, 1, 3, 4))
    np.testing.assert_array_equal(job(x), _np_reflect(x, 1, 1))


def test_no_warning_for_zero_leading_entries():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1, 1, 3, 4))) -> tp.Numpy:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return flow.reflection_pad2d(x, padding=[0, 0, 2, 3])

    assert job(np.zeros((1, 1, 3, 4), np.float32)).shape == (1, 1, 7, 10)


@pytest.mark.parametrize("padding, match", [([0, 0, 3, 1], "height"), ([0, 0, 1, 4], "width"),
                                             ([0, 0, 1], "4"), ([0, 0, -1, 1], "non-negative")])
def test_bad_padding_is_refused_at_the_users_line(padding, match):
    with pytest.raises((FlowlabError, ValueError, TypeError), match=match):
        @flow.global_function()
        def job(x: tp.Numpy.Placeholder((1, 1, 3, 4))) -> tp.Numpy:
            return flow.reflection_pad2d(x, padding=padding)

        job(np.zeros((1, 1, 3, 4), np.float32))
