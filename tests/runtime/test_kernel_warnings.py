"""A kernel's floating-point warnings are silenced (issue 24): NumPy's RuntimeWarnings from flowlab's reference
kernels ("flowlab/kernels/reference/math.py:52: RuntimeWarning: overflow encountered in square") showed as red
boxes in notebook 03, naming no op and only in the NumPy tier. The values stay NaN/Inf, as the Numba tier gives
them (silently); NaN breakpoints and catch_nan name the op. A user's own warning filter still wins."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import KernelError


def normalize(x: np.ndarray) -> np.ndarray:
    flow.clear_default_session()

    @flow.global_function()
    def normalize_job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        centered = x - flow.math.reduce_mean(x, axis=1, keepdims=True)
        scale = flow.math.sqrt(flow.math.reduce_mean(flow.math.square(centered), axis=1, keepdims=True))
        return centered / scale

    return normalize_job(x)


X = np.array([[1, 2, 3], [4, 4, 4], [1e30, 1, 0], [2, 0, 2]], np.float32)  # row 1: 0/0; row 2: overflow


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_kernels_floating_point_warnings_are_silenced(monkeypatch, impl):
    monkeypatch.setenv("FLOWLAB_KERNELS", impl)
    with warnings.catch_warnings(record=True) as caught:
        out = normalize(X)
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert np.isnan(out[1]).all()  # 0/0, as float32 arithmetic gives it
    centered = X[0] - X[0].mean()
    np.testing.assert_allclose(out[0], centered / np.sqrt((centered**2).mean()), rtol=1e-6)


def test_a_users_error_filter_still_wins(monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", "reference")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(KernelError, match=r"op 'square_0' \(square\).* raised RuntimeWarning: overflow"):
            normalize(X)
