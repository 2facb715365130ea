"""CUDA kernels at shapes that exercise the launch geometry: odd sizes cut the last block (bounds guards), grids
capped below the work (grid-stride and block-stride loops), GEMM tiles past every edge, transposed and batched
operands, strided/dilated/grouped convolutions, and the index checks (same error text as the CPU kernels, nothing
written). All against the NumPy reference kernel or NumPy itself."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.kernels.numba_cuda import launch_config
from tests.helpers.cuda_edges import both, close

from .helpers import run

RNG = np.random.default_rng(12)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # the reference's sigmoid
@pytest.mark.parametrize("max_blocks", [64, 2])
def test_elementwise_and_broadcasting_past_block_edges(max_blocks):
    x, y = f32(5, 13), f32(13)
    close(*both("broadcast_mul", {"x": [x], "y": [y]}, {}, threads=8, max_blocks=max_blocks))
    close(*both("broadcast_sub", {"x": [f32(3, 1, 5)], "y": [f32(4, 1)]}, {}, threads=8, max_blocks=max_blocks))
    close(*both("sigmoid", {"x": [x * 50]}, {}, threads=8, max_blocks=max_blocks))  # exp overflow gives 0, not an error


@pytest.mark.parametrize("ta, tb, m, k, n, batch", [
    (False, False, 7, 9, 5, ()), (True, False, 6, 5, 9, ()), (False, True, 9, 10, 3, ()), (True, True, 5, 7, 6, (2,)),
])
@pytest.mark.parametrize("tile, tile_k, micro", [(4, 4, 1), (4, 3, 2), (8, 2, 4)])
def test_tiled_gemm_edges_transposes_and_batches(ta, tb, m, k, n, batch, tile, tile_k, micro):
    a = f32(*batch, *((k, m) if ta else (m, k)))
    b = f32(*batch, *((n, k) if tb else (k, n)))
    with launch_config(tile=tile, tile_k=tile_k, micro=micro):
        got = run("matmul", {"a": [a], "b": [b]}, {"transpose_a": ta, "transpose_b": tb, "alpha": 0.5}, "gpu")[0]
    expected = 0.5 * np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, True), ((0, 2), False), (-1, False)])
def test_reductions_over_any_axes_with_few_blocks(axis, keepdims):
    x = f32(3, 5, 7)
    for op in ("reduce_sum", "reduce_mean", "reduce_max"):
        close(*both(op, {"input_tensor": [x]}, {"axis": axis, "keepdims": keepdims}, threads=4, max_blocks=2))


def test_softmax_rows_longer_than_a_block_and_nan_rows():
    x = f32(5, 37) * 30
    x[2, 11] = np.nan
    close(*both("softmax", {"in": [x]}, {}, threads=8, max_blocks=3))
    got, expected = both("argmax", {"in": [x]}, {}, threads=8, max_blocks=3)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[0][2] == 11  # a NaN is the maximum, as np.argmax


def test_sparse_cross_entropy_is_finite_for_far_apart_logits():
    logits = np.array([[0.0, 200.0, -200.0], [1.0, 2.0, 3.0]], np.float32)
    labels = np.array([2, 0], np.int32)
    got, expected = both("sparse_softmax_cross_entropy", {"prediction": [logits], "label": [labels]}, {}, threads=4)
    close(got, expected)
    assert np.isfinite(got[1]).all() and got[1][0] == pytest.approx(400.0)


@pytest.mark.parametrize("attrs, x_shape, w_shape", [
    ({"strides": (2, 1), "dilations": (1, 2), "pads": (1, 0, 2, 1), "groups": 1}, (2, 3, 7, 6), (4, 3, 3, 2)),
    ({"strides": (2, 2), "dilations": (1, 1), "pads": (0, 1, 1, 0), "groups": 2}, (1, 4, 6, 5), (6, 2, 2, 3)),
])
def test_conv_and_its_gradients_strided_dilated_grouped(attrs, x_shape, w_shape):
    x, w = f32(*x_shape), f32(*w_shape)
    y = run("conv2d", {"in": [x], "weight": [w]}, attrs, "cpu")[0]
    dy = f32(*y.shape)
    close(*both("conv2d", {"in": [x], "weight": [w]}, attrs, threads=16), rtol=1e-4, atol=1e-5)
    close(*both("conv2d_data_grad", {"dy": [dy], "weight": [w], "like": [x]}, attrs, threads=16), rtol=1e-4,
          atol=1e-5)
    close(*both("conv2d_filter_grad", {"dy": [dy], "x": [x], "like": [w]}, attrs, threads=16), rtol=1e-4,
          atol=1e-5)


@pytest.mark.parametrize("pool", [
    {"ksize": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1)},
    {"ksize": (2, 3), "strides": (1, 2), "pads": (0, 1, 2, 0)},
])
def test_pooling_and_gradients_with_ties_and_padding(pool):
    x = np.round(f32(2, 2, 6, 7))  # rounded: ties inside windows (the first maximum takes the gradient)
    y = run("max_pool2d", {"x": [x]}, pool, "cpu")[0]
    dy = f32(*y.shape)
    for op in ("max_pool2d", "avg_pool2d"):
        close(*both(op, {"x": [x]}, pool, threads=16))
    for op in ("max_pool2d_grad", "avg_pool2d_grad"):
        close(*both(op, {"x": [x], "y": [y], "dy": [dy]}, pool, threads=16))


def test_reflection_pad_and_gradient_with_wide_pads():
    x, padding = f32(1, 2, 4, 5), (3, 1, 2, 3)  # left, right, top, bottom: up to n - 1
    close(*both("reflection_pad2d", {"x": [x]}, {"padding": padding}, threads=16))
    dy = f32(1, 2, 4 + 5, 5 + 4)
    close(*both("reflection_pad2d_grad", {"dy": [dy]}, {"padding": padding}, threads=16))


def test_gather_and_segment_sum_along_a_middle_axis_with_repeated_ids():
    x, ids = f32(3, 6, 2), np.array([[5, 0, 5], [2, 2, 1]], np.int32)
    close(*both("gather", {"in": [x], "indices": [ids]}, {"axis": 1}, threads=8))
    data = f32(3, 4, 2)
    seg = np.array([1, 1, 4, 1], np.int32)  # rows with the same id add up (atomically on the device)
    close(*both("unsorted_segment_sum_like", {"data": [data], "segment_ids": [seg], "like": [f32(3, 5, 2)]},
                {"axis": 1}, threads=8))


def _error(op_type, inputs, attrs, device):
    with pytest.raises(IndexError) as info:
        with launch_config(threads=8):
            run(op_type, inputs, attrs, device)
    return str(info.value)


@pytest.mark.parametrize("op_type, inputs, attrs", [
    ("gather", {"in": [np.ones((5, 3), np.float32)], "indices": [np.array([[1, 5], [-1, 0]], np.int32)]}, {"axis": 0}),
    ("unsorted_segment_sum_like", {"data": [np.ones((4, 2), np.float32)], "segment_ids": [np.array([0, 3, 9, -2])],
                                   "like": [np.ones((3, 2), np.float32)]}, {"axis": 0}),
    ("sparse_softmax_cross_entropy", {"prediction": [np.ones((3, 4), np.float32)],
                                      "label": [np.array([0, 4, 1], np.int32)]}, {}),
    ("sparse_softmax_cross_entropy_grad", {"prob": [np.ones((3, 4), np.float32)],
                                           "label": [np.array([0, 1, -1], np.int64)],
                                           "dy": [np.ones(3, np.float32)]}, {}),
])
def test_out_of_range_indices_raise_the_cpu_error_before_writing(op_type, inputs, attrs):
    cpu = _error(op_type, inputs, attrs, "cpu")
    assert _error(op_type, inputs, attrs, "gpu") == cpu
    assert "out of range" in cpu


def test_a_failed_gather_leaves_its_output_untouched():
    from numba import cuda

    from flowlab.kernels import make_kernel

    from .helpers import _op

    _, op, in_descs, out_descs = _op("gather", {"in": [np.ones((5, 3), np.float32)],
                                               "indices": [np.array([1, 7], np.int32)]}, {"axis": 0})
    with launch_config(threads=8):
        kernel = make_kernel(op, in_descs, out_descs, device="gpu")
    out = cuda.to_device(np.full((2, 3), 7, np.float32))
    with pytest.raises(IndexError, match="index 7 .*out of range \\[0, 5\\)"):
        kernel([cuda.to_device(np.ones((5, 3), np.float32)), cuda.to_device(np.array([1, 7], np.int32))], [out], 0)
    np.testing.assert_array_equal(out.copy_to_host(), 7)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int64])
def test_segment_sum_of_narrow_integers_wraps_as_numpy(dt):
    """int8/uint8 have no atomic add on the GPU (the PTX check failed on it): they sum in order, wrapping."""
    data = RNG.integers(0, 100, (2, 6, 3)).astype(dt)
    seg = np.array([2, 0, 2, 2, 1, 2], np.int32)
    got, expected = both("unsorted_segment_sum_like", {"data": [data], "segment_ids": [seg],
                                                       "like": [np.zeros((2, 4, 3), dt)]}, {"axis": 1}, threads=8)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[0].dtype == dt


def test_reduction_blocks_fit_the_reduced_length():
    """A reduction's block is the configured size or the power of two covering the reduced length (at least a
    warp): here 64 threads for rows of 37, 32 for rows of 5 and 3."""
    from flowlab.kernels.numba_cuda._cuda import block_threads

    assert [block_threads(n, 64) for n in (37, 5, 1, 64, 65)] == [64, 32, 32, 64, 64]
    assert block_threads(5, 8) == 8 and block_threads(3, 8, floor=1) == 4
    x = f32(3, 37)
    close(*both("softmax", {"in": [x]}, {}, threads=64))
    close(*both("reduce_sum", {"input_tensor": [x[:, :5]]}, {"axis": 1, "keepdims": False}, threads=64))
