"""A dense layer's x W^T on the micro-kernel (microgemm.gemm_nt, issue 28): OpenBLAS packs the weight on every call,
180 of its 610 us at the MLP's 100 x 784 x 512; gemm_nt reads the weight's rows as they lie. Checked against NumPy
float64 and against gemm_blocked on explicit copies (the packing and the transposes move values, so the bits must
be the plain block's), for every tail of rows, columns and depth, on scratch that starts as NaN; the matmul op runs
it where it measured faster (keyed by the BLAS's threads: it runs on one), as the same function in the protocol and
in a fused segment. test_microgemm_avx2.py runs these again on a Haswell target."""

from __future__ import annotations

import json

import numpy as np
import pytest

from flowlab.kernels.numba_cpu import nn
from flowlab.kernels.numba_cpu.microgemm import aligned, gemm_blocked, gemm_nt, nt_scratch
from tests.helpers.matmul import matmul_kernel

SHAPES = [(1, 1, 1), (100, 784, 512), (17, 33, 9), (16, 16, 16), (37, 50, 45), (8, 500, 10), (33, 15, 70),
          (48, 17, 3), (65, 31, 40)]


def _nan_scratch(m: int, k: int, n: int, dtype) -> tuple[np.ndarray, ...]:
    packed, product, offsets = nt_scratch(m, k, n, np.dtype(dtype))
    packed[:], product[:] = np.nan, np.nan  # garbage the call must not read into out
    return packed, product, offsets


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", SHAPES)
def test_gemm_nt_is_numpys_product_and_the_plain_blocks_bits(m: int, k: int, n: int, dtype) -> None:
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype)
    out = np.full((m, n), np.nan, dtype)
    scratch = _nan_scratch(m, k, n, dtype)
    gemm_nt(a, b, out, *scratch)
    want = a.astype(np.float64) @ b.T.astype(np.float64)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    assert np.abs(out - want).max() <= tol * max(1.0, np.abs(want).max()) * k ** 0.5
    # the same sums as the plain block over b's rows and a^T padded to whole vectors, bit for bit
    mp = scratch[1].shape[1]
    at = np.zeros((k, mp), dtype)
    at[:, :m] = a.T
    plain = np.empty((n, mp), dtype)
    gemm_blocked(False, n, mp, k, b.reshape(-1), 0, k, at.reshape(-1), 0, mp, False, plain.reshape(-1), 0, mp)
    assert out.tobytes() == np.ascontiguousarray(plain[:, :m].T).tobytes()
    again = np.empty_like(out)  # a second call on the used scratch: the same bits
    gemm_nt(a, b, again, *scratch)
    assert again.tobytes() == out.tobytes()


def test_gemm_nt_propagates_nan_and_inf_as_numpy() -> None:
    a, b = np.ones((20, 40), np.float32), np.ones((30, 40), np.float32)
    a[3, 7], b[5, 9] = np.nan, np.inf
    out = np.empty((20, 30), np.float32)
    gemm_nt(a, b, out, *_nan_scratch(20, 40, 30, np.float32))
    want = a.astype(np.float64) @ b.T
    assert np.array_equal(np.isnan(out), np.isnan(want)) and np.array_equal(np.isinf(out), np.isinf(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_aligned_buffers_start_on_a_cache_line(dtype) -> None:
    for size in (1, 15, 100, 100_000):
        buffer = aligned(size, np.dtype(dtype))
        assert buffer.ctypes.data % 64 == 0 and buffer.size == size and not buffer.any()


@pytest.mark.parametrize("measured, fn", [(True, gemm_nt), (False, nn._dot_gemm)])
def test_the_matmul_runs_gemm_nt_where_it_measured_faster(measured, fn, monkeypatch) -> None:
    monkeypatch.setattr(nn, "nt_micro_faster", lambda *shape: measured)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((37, 50)).astype(np.float32), rng.standard_normal((45, 50)).astype(np.float32)
    kernel, out = matmul_kernel(a, b, False, True)
    call = kernel.fused([a, b], [out])
    assert call.fn is fn
    kernel([a, b], [out])
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.T, rtol=1e-5, atol=1e-5)
    fused = np.full_like(out, 7)
    call = kernel.fused([a, b], [fused])
    call.fn(*(arg.array if isinstance(arg, nn.Owned) else arg for arg in call.args))
    assert fused.tobytes() == out.tobytes()  # the fused segment's call is the protocol's kernel


def test_the_choice_is_keyed_by_the_blas_threads_and_needs_them(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(nn, "_choice_file", lambda: tmp_path / "choice.json")
    monkeypatch.setattr(nn, "_measured_choices", {})
    monkeypatch.setattr(nn, "blas_threads", lambda: None)  # a BLAS that cannot say: BLAS, nothing measured
    assert nn.nt_micro_faster(100, 784, 512, np.float32) is False and not (tmp_path / "choice.json").exists()
    monkeypatch.setattr(nn, "blas_threads", lambda: 1)
    one = nn.nt_micro_faster(64, 200, 96, np.float32)
    monkeypatch.setattr(nn, "blas_threads", lambda: 2)
    nn.nt_micro_faster(64, 200, 96, np.float32)
    keys = json.loads((tmp_path / "choice.json").read_text())
    assert sorted(key.split()[-3:] for key in keys) == [["nt", "threads=1", "float32"],
                                                       ["nt", "threads=2", "float32"]]
    assert keys[next(key for key in keys if "threads=1" in key)] is one
    assert nn.nt_micro_faster(4, 4, 4, np.float32) is False  # too small to pay for its copies: not measured


@pytest.mark.parametrize("ours, chosen", [(0.90, True), (0.97, False), (1.02, False)])
def test_a_kernel_of_ours_replaces_blas_only_when_clearly_faster(ours, chosen, tmp_path, monkeypatch) -> None:
    """A clock that moves by each call's cost: ours at ``ours`` x BLAS's time; within 5 % BLAS stays (nn.MARGIN)."""
    clock = [0.0]

    def costs(seconds: float):
        def call(*args) -> None:
            clock[0] += seconds

        return call

    monkeypatch.setattr(nn, "_choice_file", lambda: tmp_path / "choice.json")
    monkeypatch.setattr(nn, "_measured_choices", {})
    monkeypatch.setattr(nn.time, "thread_time", lambda: clock[0])
    monkeypatch.setattr(nn, "_dot_gemm", costs(1e-3))
    assert nn._measured_faster("8x8x8 test", costs(ours * 1e-3), lambda rng: ()) is chosen


def test_shapes_whose_buffers_would_be_big_stay_on_blas(tmp_path, monkeypatch) -> None:
    """gemm_nt's buffers live with its kernel: a BERT-sized x W^T (1024 x 768 x 3072, 15 MB of them) is not even
    measured."""
    monkeypatch.setattr(nn, "_choice_file", lambda: tmp_path / "choice.json")
    monkeypatch.setattr(nn, "blas_threads", lambda: 1)
    monkeypatch.setattr(nn, "_measured_faster", lambda *args: True)
    assert nn.nt_micro_faster(1024, 768, 3072, np.float32) is False
    assert nn.nt_micro_faster(100, 784, 512, np.float32) is True
    packed, product, _ = nt_scratch(100, 784, 512, np.dtype(np.float32))
    assert packed.nbytes + product.nbytes <= nn.NT_SCRATCH_BYTES
