"""The Numba matmul's kernel for products with few output rows (issue 13: an MLP's output-layer weight gradient,
dlogits^T h, 10 x 512 from a batch of 100, ran at 18 GFLOP/s through BLAS on an AVX2 EPYC): it may run those shapes
only, where it measured faster than BLAS on this machine (issue 28: on an AVX-512 Xeon BLAS is 2.5x faster), agrees
with an independent float64 NumPy product, propagates NaN and Inf as the reference does, and is the same function in
the protocol's kernel and in a fused segment's call (so both give the same bits)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from flowlab.kernels.numba_cpu import nn
from tests.helpers.matmul import matmul_kernel

from .helpers import run_op

RNG = np.random.default_rng(7)


# (m, k, n, transpose_a, transpose_b): the MLP's dW2 = dlogits^T h (10 x 100 x 512), odd sizes, k of 1 to 5
SMALL_M = [(10, 100, 512, True, False), (10, 100, 512, False, False), (3, 7, 70, True, False),
           (16, 1, 64, False, False), (1, 5, 100, True, False), (7, 13, 129, False, False)]


@pytest.fixture
def few_rows_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The few-rows kernel measured faster, whatever this machine measures."""
    monkeypatch.setattr(nn, "few_rows_faster", lambda *shape: True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n, ta, tb", SMALL_M)
def test_few_rows_products_use_the_small_kernel_and_match_numpy(m, k, n, ta, tb, dtype, few_rows_wins):
    a = RNG.uniform(-2, 2, (k, m) if ta else (m, k)).astype(dtype)
    b = RNG.uniform(-2, 2, (n, k) if tb else (k, n)).astype(dtype)
    kernel, out = matmul_kernel(a, b, ta, tb)
    assert kernel.fused([a, b], [out]).fn is nn._dot_few_rows
    kernel([a, b], [out])
    expected = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
    np.testing.assert_allclose(out, expected, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
    fused = np.full_like(out, 7)
    call = kernel.fused([a, b], [fused])
    call.fn(*call.args)
    assert fused.tobytes() == out.tobytes()  # the fused segment's call is the protocol's kernel


@pytest.mark.parametrize("m, k, n, ta, tb", [(100, 784, 512, False, True), (512, 100, 784, True, False),
                                             (100, 10, 512, False, False), (100, 512, 10, False, True),
                                             (10, 100, 512, False, True), (10, 100, 20, True, False)])
def test_other_products_keep_blas(m, k, n, ta, tb, few_rows_wins, monkeypatch):
    """Many rows, or rows too short to vectorize, or b's rows not contiguous (b transposed): BLAS stays (where
    microgemm.gemm_nt did not measure faster for x W^T: test_gemm_nt.py)."""
    monkeypatch.setattr(nn, "nt_micro_faster", lambda *shape: False)
    a = np.ones((k, m) if ta else (m, k), np.float32)
    b = np.ones((n, k) if tb else (k, n), np.float32)
    kernel, out = matmul_kernel(a, b, ta, tb)
    assert kernel.fused([a, b], [out]).fn is nn._dot_gemm


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["a", "b"])
def test_nan_and_inf_reach_the_same_outputs_as_the_reference(special, where):
    a, b = RNG.uniform(-2, 2, (100, 10)).astype(np.float32), RNG.uniform(-2, 2, (100, 512)).astype(np.float32)
    (a if where == "a" else b)[3, 5] = special
    b[4, 7] = 0.0
    a[4, 2] = np.inf  # inf * 0 is NaN in BLAS and here
    attrs = {"transpose_a": True}
    with np.errstate(invalid="ignore"):
        ref = run_op("matmul", {"a": [a], "b": [b]}, attrs, "reference")[0]
    got = run_op("matmul", {"a": [a], "b": [b]}, attrs, "numba")[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_k_zero_gives_zeros():
    a, b = np.ones((0, 3), np.float32), np.ones((0, 80), np.float32)
    np.testing.assert_array_equal(run_op("matmul", {"a": [a], "b": [b]}, {"transpose_a": True}, "numba")[0],
                                  np.zeros((3, 80), np.float32))


def test_where_blas_measured_faster_the_few_rows_shapes_run_blas(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(nn, "few_rows_faster", lambda *shape: False)
    a, b = RNG.uniform(-2, 2, (100, 10)).astype(np.float32), RNG.uniform(-2, 2, (100, 512)).astype(np.float32)
    kernel, out = matmul_kernel(a, b, True, False)
    assert kernel.fused([a, b], [out]).fn is nn._dot_gemm
    kernel([a, b], [out])
    np.testing.assert_allclose(out, a.T.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def _slowed(fn):
    def slow(a, b, out):  # burns thread CPU time, as a slower kernel would
        fn(a, b, out)
        end = time.thread_time() + 2e-3
        while time.thread_time() < end:
            pass

    return slow


@pytest.mark.parametrize("slow", ["_dot_few_rows", "_dot_gemm"])
def test_the_choice_is_the_faster_kernel_measured_once_and_read_back(slow, tmp_path, monkeypatch):
    monkeypatch.setattr(nn, "_choice_file", lambda: tmp_path / "choice.json")
    monkeypatch.setattr(nn, "_measured_choices", {})
    monkeypatch.setattr(nn, slow, _slowed(getattr(nn, slow)))
    expected = slow == "_dot_gemm"
    assert nn.few_rows_faster(10, 100, 512, True, np.dtype(np.float32)) is expected
    table = json.loads((tmp_path / "choice.json").read_text())
    (key, value), = table.items()
    assert value is expected and "10x100x512 ta=True float32" in key
    # another process reads the file back and does not measure: its choice, and so its bits, are the same
    (tmp_path / "choice.json").write_text(json.dumps({key: not expected}))
    monkeypatch.setattr(nn, "_measured_choices", {})
    assert nn.few_rows_faster(10, 100, 512, True, np.dtype(np.float32)) is (not expected)
