"""The Numba conv2d and pooling kernels (kernels/numba_cpu/conv.py, cnn.py) against the NumPy reference kernels
on odd shapes: stride 2, VALID and SAME paddings on odd sizes, 1x1 kernels, 1 and 3 channels, dilation, groups,
windows larger than the input, LeNet's 2x2 pools, and NaN / Inf reaching the same outputs."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.ops.cnn_ops import explicit_pads

from .helpers import run_op

# (n, c, h, w), (o, c/groups, kh, kw), strides, padding, dilations, groups
CASES = [
    ((3, 1, 7, 9), (4, 1, 3, 3), (2, 2), "SAME", (1, 1), 1),
    ((2, 3, 9, 7), (5, 3, 5, 5), (1, 1), "SAME", (1, 1), 1),
    ((4, 3, 7, 7), (2, 3, 3, 2), (2, 1), "VALID", (1, 1), 1),
    ((3, 3, 5, 6), (6, 3, 1, 1), (1, 1), "VALID", (1, 1), 1),
    ((2, 3, 6, 5), (4, 3, 1, 1), (2, 2), "SAME", (1, 1), 1),
    ((5, 1, 11, 10), (3, 1, 3, 3), (1, 2), "SAME_UPPER", (2, 2), 1),
    ((3, 4, 8, 9), (6, 2, 3, 3), (2, 2), "SAME", (1, 2), 2),
    ((2, 6, 5, 5), (3, 2, 2, 3), (1, 1), "VALID", (2, 1), 3),
    ((7, 2, 4, 4), (3, 2, 5, 5), (3, 3), "SAME", (1, 1), 1),  # window larger than the input
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1), "VALID", (1, 1), 1),
    ((3, 4, 5, 3), (6, 2, 1, 1), (1, 1), "VALID", (1, 1), 2),  # 1x1, grouped: GEMMs straight on the planes
    ((2, 2, 6, 7), (3, 2, 1, 1), (1, 1), "SAME", (3, 3), 1),  # 1x1 with SAME at dilation 3: no padding, direct
    ((2, 3, 9, 8), (4, 3, 3, 3), (3, 2), "SAME", (2, 1), 1),  # stride 3 x 2 with dilation: strided inner runs
]
def attrs_of(case):
    xs, ws, strides, padding, dil, groups = case
    pads = explicit_pads(padding, xs[2:], ws[2:], strides, dil)
    return {"strides": strides, "dilations": dil, "pads": pads, "groups": groups}


def conv_all(impl, x, w, dy_seed, attrs):
    (y,) = run_op("conv2d", {"in": [x], "weight": [w]}, attrs, impl)
    dy = np.random.default_rng(dy_seed).standard_normal(y.shape).astype(x.dtype)
    (dx,) = run_op("conv2d_data_grad", {"dy": [dy], "weight": [w], "like": [x]}, attrs, impl)
    (dw,) = run_op("conv2d_filter_grad", {"dy": [dy], "x": [x], "like": [w]}, attrs, impl)
    return y, dx, dw


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_numba_conv_equals_reference(case):
    rng = np.random.default_rng(len(case[0]) + sum(case[0]))
    x = rng.standard_normal(case[0]).astype(np.float32)
    w = rng.standard_normal(case[1]).astype(np.float32)
    attrs = attrs_of(case)
    want = conv_all("reference", x, w, 1, attrs)
    got = conv_all("numba", x, w, 1, attrs)
    for name, a, b in zip(("y", "dx", "dw"), got, want):
        assert a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4, err_msg=name)


def test_numba_conv_float64_and_a_long_batch():
    """float64 runs BLAS's dgemm (blas.py picks it by item size); 40 samples accumulate into one filter
    gradient: the result stays within the reference's tolerance at float64's precision."""
    case = ((40, 3, 8, 8), (5, 3, 3, 3), (1, 1), "SAME", (1, 1), 1)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(case[0])
    w = rng.standard_normal(case[1])
    attrs = attrs_of(case)
    for name, a, b in zip(("y", "dx", "dw"), conv_all("numba", x, w, 1, attrs), conv_all("reference", x, w, 1, attrs)):
        assert a.dtype == np.float64, name
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_conv_nan_inf_reach_the_same_outputs(bad):
    case = CASES[1]
    rng = np.random.default_rng(3)
    x = rng.standard_normal(case[0]).astype(np.float32)
    w = rng.standard_normal(case[1]).astype(np.float32)
    x[1, 2, 4, 3] = bad
    w[0, 1, 0, 0] = bad  # a filter value: reaches padded positions too (0 * inf is NaN in both)
    attrs = attrs_of(case)
    want = conv_all("reference", x, w, 2, attrs)
    for name, a, b in zip(("y", "dx", "dw"), conv_all("numba", x, w, 2, attrs), want):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=name)
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b), err_msg=name)
        finite = np.isfinite(b)
        np.testing.assert_allclose(a[finite], b[finite], rtol=1e-4, atol=1e-4, err_msg=name)


POOLS = [
    ((2, 3, 7, 9), (2, 2), (2, 2), "SAME"),
    ((2, 3, 7, 9), (3, 3), (2, 2), "VALID"),
    ((3, 1, 5, 6), (3, 2), (1, 2), "SAME"),
    ((1, 2, 8, 8), (1, 1), (1, 1), "VALID"),
    ((2, 2, 4, 5), (5, 5), (3, 3), "SAME"),  # a window larger than the input
    ((2, 3, 8, 6), (2, 2), (2, 2), "SAME"),  # LeNet's pools: the 2x2 kernels of cnn.py
    ((2, 3, 7, 9), (2, 2), (2, 2), "VALID"),  # ... with a row and a column left over
]


def pool_all(kind, impl, x, attrs):
    (y,) = run_op(kind, {"x": [x]}, attrs, impl)
    dy = np.random.default_rng(4).standard_normal(y.shape).astype(x.dtype)
    (dx,) = run_op(f"{kind}_grad", {"x": [x], "y": [y], "dy": [dy]}, attrs, impl)
    return y, dx


@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("case", POOLS, ids=[f"pool{i}" for i in range(len(POOLS))])
@pytest.mark.parametrize("special", ["none", "nan", "inf", "-inf", "ties"])
def test_numba_pooling_equals_reference(kind, case, special):
    xs, k, s, padding = case
    x = np.random.default_rng(sum(xs)).standard_normal(xs).astype(np.float32)
    if special == "ties":  # the first maximum of a window takes the gradient
        x = np.round(x)
    elif special != "none":
        x[0, 0, 1, 1] = x[-1, -1, -1, 0] = float(special)
        x[0, 0, 1, 2] = float(special)  # two in one window: the first NaN takes the gradient
    attrs = {"ksize": k, "strides": s, "pads": explicit_pads(padding, xs[2:], k, s, (1, 1))}
    for name, a, b in zip(("y", "dx"), pool_all(kind, "numba", x, attrs), pool_all(kind, "reference", x, attrs)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=name)  # NaN where NaN, Inf where Inf
