"""conv2d's implicit-GEMM CUDA kernel (kernels/numba_cuda/conv_gemm.py) against the NumPy reference, at tile
configurations that cut the output channels, the output pixels and the K = C/groups * KH * KW taps into partial
tiles, with strides, dilations, asymmetric padding and groups; and a NaN weight on a padding tap gives NaN as the
CPU's im2col does. Shapes stay small: the simulator runs each CUDA thread as a Python thread."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.cuda_edges import both, close

from .helpers import run

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("tile, tile_k, micro", [(4, 4, 2), (8, 3, 2), (4, 16, 1)])
@pytest.mark.parametrize("attrs, x_shape, w_shape", [
    ({"strides": (1, 1), "dilations": (1, 1), "pads": (1, 1, 1, 1), "groups": 1}, (2, 3, 5, 4), (5, 3, 3, 3)),
    ({"strides": (2, 1), "dilations": (1, 2), "pads": (1, 0, 2, 1), "groups": 1}, (1, 2, 7, 6), (3, 2, 3, 2)),
    ({"strides": (1, 2), "dilations": (2, 1), "pads": (0, 2, 1, 0), "groups": 3}, (2, 6, 6, 7), (6, 2, 2, 3)),
])
def test_implicit_gemm_conv2d_matches_the_reference(tile, tile_k, micro, attrs, x_shape, w_shape):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    got, expected = both("conv2d", {"in": [x], "weight": [w]}, attrs, tile=tile, tile_k=tile_k, micro=micro)
    close(got, expected, rtol=1e-5, atol=1e-5)


def test_implicit_gemm_conv2d_float64_and_a_nan_weight_on_a_padding_tap():
    attrs = {"strides": (1, 1), "dilations": (1, 1), "pads": (1, 0, 0, 0), "groups": 1}
    x = RNG.standard_normal((1, 1, 3, 3))
    w = RNG.standard_normal((2, 1, 2, 1))
    got, expected = both("conv2d", {"in": [x], "weight": [w]}, attrs, tile=4, tile_k=2, micro=2)
    close(got, expected, rtol=1e-12, atol=1e-13)
    w[0, 0, 0, 0] = np.nan  # tap ki=0 reads the padding row for output row 0: NaN * 0 is NaN there too
    got = run("conv2d", {"in": [x], "weight": [w]}, attrs, "gpu")[0]
    expected = run("conv2d", {"in": [x], "weight": [w]}, attrs, "cpu")[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    assert np.isnan(got[0, 0]).all() and not np.isnan(got[0, 1]).any()
