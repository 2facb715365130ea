"""Winograd convolution (kernels/numba_cpu/winograd.py, winograd_conv.py): the transforms against hand values and
exact rational arithmetic, the three kernels against the float64 direct convolution and the im2col kernel on
random shapes, NaN / Inf / overflow reaching the outputs the im2col kernel gives them, which convs take it, and
a conv net trained through replay and fusion bit for bit equal to the protocol."""

from __future__ import annotations

import json
import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels.numba_cpu import winograd, winograd_conv, winograd_tf
from flowlab.kernels.numba_cpu.winograd_conv import MAX_PRODUCTS
from tests.helpers.replay_proof import assert_replayed_and_fused, assert_same, run
from tests.ops.helpers import op_kernel

F = Fraction


def test_f2x2_3x3_matrices_are_lavins() -> None:
    """Lavin & Gray's F(2x2, 3x3) at 0, 1, -1: their B^T, G and A^T, up to the sign of the row and column for the
    point at infinity (a scaling by -1 that both sides carry: the construction uses |prod (p_j - p_l)|)."""
    at, g, bt = winograd.matrices(2, 3)
    assert at == [[1, 1, 1, 0], [0, 1, -1, 1]]
    assert g == [[1, 0, 0], [F(1, 2), F(1, 2), F(1, 2)], [F(1, 2), F(-1, 2), F(1, 2)], [0, 0, 1]]
    assert bt == [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, -1, 0, 1]]


@pytest.mark.parametrize("m, r", [(2, 3), (4, 3), (2, 5), (4, 5), (6, 3)])
def test_the_matrices_compute_the_correlation_exactly(m: int, r: int) -> None:
    """In rationals, A^T [(G g) * (B^T d)] is the correlation y_i = sum_j g_j d_{i+j}, for every unit g and d
    (so for all, by linearity); and the 2-D nesting used by the kernels follows."""
    at, g, bt = winograd.matrices(m, r)
    a = m + r - 1
    for j in range(r):
        for k in range(a):
            gg = [F(int(i == j)) for i in range(r)]
            dd = [F(int(i == k)) for i in range(a)]
            u = [sum(g[p][q] * gg[q] for q in range(r)) for p in range(a)]
            v = [sum(bt[p][q] * dd[q] for q in range(a)) for p in range(a)]
            y = [sum(at[i][p] * u[p] * v[p] for p in range(a)) for i in range(m)]
            assert y == [gg[k - i] if 0 <= k - i < r else 0 for i in range(m)], (j, k)


@pytest.mark.parametrize("r", [3, 5])
def test_each_encoded_transform_is_its_matrix(r: int) -> None:
    """_tf over each matrix's encoding (single rows, +/- row pairs, the whole-matrix passes) against L X L^T in
    float64, on vectors longer than one block (BLOCK) and with a stride between the rows."""
    plan = winograd.Winograd(2, 32, 8, 8, 32, 8, 8, 1, 1, r, np.float64)
    rng = np.random.default_rng(r)
    n = winograd_tf.BLOCK + 37
    for name, (idx, coef) in zip(("BT", "AT", "A", "G", "GT"), (plan.b, plan.a, plan.am, plan.g, plan.gt)):
        mat = np.array([[float(v) for v in row] for row in plan.mats[name]])
        la, lb = mat.shape
        src = rng.standard_normal((lb, lb, n))
        dst = np.zeros((la, la, n + 3))  # rows n + 3 apart
        tmp = np.empty(la * lb * winograd_tf.BLOCK)
        winograd_tf._tf(idx, coef, src.reshape(-1), 0, lb * n, n, dst.reshape(-1), 0, la * (n + 3), n + 3, n, tmp)
        want = np.einsum("kp,pqi,lq->kli", mat, src, mat)
        np.testing.assert_allclose(dst[:, :, :n], want, rtol=1e-12, atol=1e-12, err_msg=name)
        assert not dst[:, :, n:].any(), name  # nothing written between the rows


def _kernel(op_type: str, inputs: dict[str, list[np.ndarray]], attrs: dict, wino: bool, monkeypatch):
    monkeypatch.setenv("FLOWLAB_WINOGRAD", "1" if wino else "0")
    kernel, ins, outs = op_kernel(op_type, inputs, attrs, "numba")
    kernel(ins, outs)
    return outs[0], kernel.info


def _all(x, w, dy, attrs, wino, monkeypatch):
    """(y, dx, dw) and whether each ran Winograd."""
    got = [_kernel("conv2d", {"in": [x], "weight": [w]}, attrs, wino, monkeypatch),
           _kernel("conv2d_data_grad", {"dy": [dy], "weight": [w], "like": [x]}, attrs, wino, monkeypatch),
           _kernel("conv2d_filter_grad", {"dy": [dy], "x": [x], "like": [w]}, attrs, wino, monkeypatch)]
    return [g[0] for g in got], [g[1] is not None for g in got]


def _attrs(pads: tuple[int, int, int, int]) -> dict:
    return {"strides": (1, 1), "dilations": (1, 1), "pads": pads, "groups": 1}


def _direct64(x, w, dy, pads):
    """The float64 direct convolution and its gradients (loops over the filter's taps)."""
    x, w, dy = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    n, c, h, wd = x.shape
    o, _, r, _ = w.shape
    pt, pb, pl, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = dy.shape[2:]
    y = np.zeros((n, o, oh, ow))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for i in range(r):
        for j in range(r):
            patch = xp[:, :, i:i + oh, j:j + ow]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
            dxp[:, :, i:i + oh, j:j + ow] += np.einsum("nohw,oc->nchw", dy, w[:, :, i, j])
            dw[:, :, i, j] = np.einsum("nohw,nchw->oc", dy, patch)
    return y, dxp[:, :, pt:pt + h, pl:pl + wd], dw


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 4), c=st.integers(32, 35), o=st.integers(32, 37), h=st.integers(3, 19),
       w=st.integers(3, 19), r=st.sampled_from([3, 5]), seed=st.integers(0, 2 ** 16),
       pads=st.tuples(*[st.integers(0, 4)] * 4))
def test_winograd_against_the_float64_direct_conv_and_im2col(n, c, o, h, w, r, seed, pads, monkeypatch) -> None:
    pads = tuple(min(p, r - 1) for p in pads)
    oh, ow = h + pads[0] + pads[1] - r + 1, w + pads[2] + pads[3] - r + 1
    if oh < 1 or ow < 1:
        return
    # F(4x4, r x r): (r + 3)^2 products a tile, taken where that is at most MAX_PRODUCTS of im2col's (partial tiles)
    taken = (r + 3) ** 2 * -(-oh // 4) * -(-ow // 4) <= MAX_PRODUCTS * r * r * oh * ow
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((o, c, r, r)).astype(np.float32)
    dy = rng.standard_normal((n, o, oh, ow)).astype(np.float32)
    got, took = _all(x, wt, dy, _attrs(pads), True, monkeypatch)
    assert took == [taken] * 3
    im2col, took = _all(x, wt, dy, _attrs(pads), False, monkeypatch)
    assert took == [False, False, False]
    for name, a, b, ref in zip(("y", "dx", "dw"), got, im2col, _direct64(x, wt, dy, pads)):
        assert a.shape == ref.shape, name
        scale = max(float(np.abs(ref).max()), 1e-30)
        # F(4x4, r x r) in float32: ~5e-6 of the output's scale measured (im2col ~4e-7)
        assert np.abs(a - ref).max() <= 5e-5 * scale, name
        assert np.abs(a - b).max() <= 5e-5 * scale, name


def test_several_chunks_and_a_partial_last_one(monkeypatch) -> None:
    """19 samples of 9 tiles: chunks of 14 and 5 samples (about 128 tiles a chunk); the filter gradient sums the
    chunks' GEMMs (beta 1), the forward and data gradient write each chunk's samples."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((19, 32, 12, 12)).astype(np.float32)
    wt = rng.standard_normal((33, 32, 5, 5)).astype(np.float32)
    dy = rng.standard_normal((19, 33, 12, 12)).astype(np.float32)
    plan = winograd.Winograd(19, 32, 12, 12, 33, 12, 12, 2, 2, 5, np.float32)
    assert int(plan.geo[winograd.S]) == 14
    got, took = _all(x, wt, dy, _attrs((2, 2, 2, 2)), True, monkeypatch)
    assert took == [True, True, True]
    for name, a, ref in zip(("y", "dx", "dw"), got, _direct64(x, wt, dy, (2, 2, 2, 2))):
        assert np.abs(a - ref).max() <= 5e-5 * np.abs(ref).max(), name


def test_a_pad_over_r_minus_1_stays_exact(monkeypatch) -> None:
    """A pad of 3 on a 3x3 filter: the data gradient would need dy cropped (padded by r - 1 - pad < 0), so such a
    conv stays on im2col, and its three results match the float64 direct conv."""
    rng = np.random.default_rng(6)
    pads = (3, 1, 0, 2)
    x = rng.standard_normal((2, 32, 9, 9)).astype(np.float32)
    wt = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((2, 32, 11, 9)).astype(np.float32)
    got, took = _all(x, wt, dy, _attrs(pads), True, monkeypatch)
    assert took == [False, False, False]
    for name, a, ref in zip(("y", "dx", "dw"), got, _direct64(x, wt, dy, pads)):
        assert np.abs(a - ref).max() <= 5e-5 * np.abs(ref).max(), name


def test_float64_stays_near_float64s_precision(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    x, wt = rng.standard_normal((3, 32, 9, 10)), rng.standard_normal((33, 32, 5, 5))
    dy = rng.standard_normal((3, 33, 9, 10))
    got, took = _all(x, wt, dy, _attrs((2, 2, 2, 2)), True, monkeypatch)
    assert took == [True, True, True]
    for name, a, ref in zip(("y", "dx", "dw"), got, _direct64(x, wt, dy, (2, 2, 2, 2))):
        assert np.abs(a - ref).max() <= 1e-12 * np.abs(ref).max(), name


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 3e38])
def test_nonfinite_values_reach_the_outputs_im2col_gives_them(bad, monkeypatch) -> None:
    """A tile mixes its whole patch: a NaN or Inf would spread to outputs the direct conv keeps finite, and a
    large finite input can overflow in the transform (3e38 * 1e-3 is finite, its transform is not): the kernel
    then runs im2col over its result, bit for bit."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 32, 8, 8)).astype(np.float32)
    wt = rng.standard_normal((32, 32, 3, 3)).astype(np.float32) * np.float32(1e-3)
    dy = rng.standard_normal((2, 32, 8, 8)).astype(np.float32)
    x[1, 3, 4, 5] = bad
    if not np.isfinite(bad):
        dy[0, 2, 1, 1] = bad
    got, took = _all(x, wt, dy, _attrs((1, 1, 1, 1)), True, monkeypatch)
    assert took == [True, True, True]
    want, _ = _all(x, wt, dy, _attrs((1, 1, 1, 1)), False, monkeypatch)
    for name, a, b in zip(("y", "dx", "dw"), got, want):
        if name == "dx" and np.isfinite(bad):
            continue  # dx does not read x
        assert a.tobytes() == b.tobytes(), name
    if np.isfinite(bad):
        assert np.isfinite(got[0]).all()


@pytest.mark.parametrize("x_shape, w_shape, attrs, taken", [
    ((4, 32, 14, 14), (64, 32, 5, 5), _attrs((2, 2, 2, 2)), True),  # LeNet's conv2
    ((4, 1, 28, 28), (32, 1, 5, 5), _attrs((2, 2, 2, 2)), False),  # conv1: one input channel
    ((4, 16, 9, 9), (16, 16, 3, 3), _attrs((1, 1, 1, 1)), False),  # 16 channels: measured slower
    ((4, 32, 9, 9), (16, 32, 3, 3), _attrs((1, 1, 1, 1)), False),  # 16 output channels
    ((4, 32, 3, 3), (32, 32, 3, 3), _attrs((0, 0, 0, 0)), False),  # a 1x1 output: one tile for one value
    ((4, 32, 5, 5), (32, 32, 3, 3), _attrs((1, 1, 1, 1)), False),  # 5x5 out: 4 tiles, 0.64 of im2col's products
    ((4, 32, 8, 8), (32, 32, 3, 3), _attrs((1, 1, 1, 1)), True),  # 8x8: whole tiles, 0.25
    ((4, 32, 9, 9), (32, 32, 3, 3), {**_attrs((1, 1, 1, 1)), "strides": (2, 2)}, False),
    ((4, 32, 9, 9), (32, 32, 3, 3), {**_attrs((2, 2, 2, 2)), "dilations": (2, 2)}, False),
    ((4, 32, 9, 9), (32, 16, 3, 3), {**_attrs((1, 1, 1, 1)), "groups": 2}, False),
    ((4, 32, 9, 9), (32, 32, 1, 1), _attrs((0, 0, 0, 0)), False),
    ((4, 32, 9, 9), (32, 32, 7, 7), _attrs((3, 3, 3, 3)), False),
    ((4, 32, 9, 9), (32, 32, 3, 3), _attrs((3, 1, 1, 1)), False),  # a pad over r - 1: dy would be cropped
])
def test_which_convs_take_winograd(x_shape, w_shape, attrs, taken, monkeypatch) -> None:
    x = np.ones(x_shape, np.float32)
    _, plan = _kernel("conv2d", {"in": [x], "weight": [np.ones(w_shape, np.float32)]}, attrs, True, monkeypatch)
    assert (plan is not None) == taken
    if taken:  # and the switch turns it off
        _, plan = _kernel("conv2d", {"in": [x], "weight": [np.ones(w_shape, np.float32)]}, attrs, False,
                          monkeypatch)
        assert plan is None
        assert "F(4x4, 5x5)" in repr(winograd.Winograd(4, 32, 14, 14, 64, 14, 14, 2, 2, 5, np.float32))


def _build_convnet(watched: list[np.ndarray]):
    """Two convs that take Winograd (32 -> 32 channels, 3x3 and 5x5) in a train job."""
    batch = 3

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((batch, 32, 8, 8)),
                  labels: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        init = flow.truncated_normal(0.1)
        h = flow.layers.conv2d(images, 32, 3, padding="SAME", activation=flow.nn.relu, name="wconv1",
                               kernel_initializer=init)
        h = flow.layers.conv2d(h, 32, 5, padding="SAME", activation=flow.nn.relu, name="wconv2",
                               kernel_initializer=init)
        flow.watch(h, watched.append)
        logits = flow.layers.dense(flow.reshape(h, [batch, -1]), 10, kernel_initializer=init, name="dense")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.05]), momentum=0.9).minimize(loss)
        return loss

    def call(k: int) -> list[np.ndarray]:
        rng = np.random.default_rng(100 + k)
        return [train_job(rng.standard_normal((batch, 32, 8, 8)).astype(np.float32),
                          rng.integers(0, 10, batch).astype(np.int32))]

    return call


@pytest.mark.usefixtures("fuse_in_call")  # the compiled segment runs by a given call
def test_a_winograd_convnet_replayed_and_fused_is_the_protocol_bit_for_bit(monkeypatch) -> None:
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")
    monkeypatch.setenv("FLOWLAB_WINOGRAD", "1")
    protocol = run(_build_convnet, False, 12, monkeypatch)
    kernels = [a.kernel for a in flow.default_session().runtime.actors.values() if a.kernel is not None]
    assert sum(k.info is not None for k in kernels) == 5  # 2 forward, 2 filter, 1 data grad
    replayed = run(_build_convnet, True, 12, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    assert_same(protocol, replayed)
    flow.clear_default_session()
    assert os.environ["FLOWLAB_WINOGRAD"] == "1"


def _pin(monkeypatch, m: int, chunk: int) -> None:
    """The autotune (FLOWLAB_WINOGRAD=auto) made to choose (m, chunk) for every conv: its measurement replaced,
    its cache neither read nor written."""
    monkeypatch.setenv("FLOWLAB_WINOGRAD", "auto")
    record = {"algorithm": winograd_conv._name(m, chunk), "m": m, "chunk_tiles": chunk, "ms": {}}
    monkeypatch.setattr(winograd_conv, "_measure", lambda make, ctx: record)
    monkeypatch.setattr(winograd_conv, "_load", lambda: {})
    monkeypatch.setattr(winograd_conv, "_store", lambda key, rec: None)
    monkeypatch.setattr(winograd_conv, "_chosen", {})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, chunk", [(0, 0), *winograd_conv.CANDIDATES])
@pytest.mark.parametrize("r", [3, 5])
def test_every_algorithm_the_autotune_may_choose_against_the_float64_direct_conv(dtype, m, chunk, r,
                                                                                 monkeypatch) -> None:
    """Odd shapes: partial last tiles (11 x 10 inputs), uneven pads, 33 -> 35 channels (padded to the GEMM
    micro-kernel's blocks), 7 samples (a partial last chunk at every chunk size)."""
    _pin(monkeypatch, m, chunk)
    if m:  # the chunk really is the one asked for (in samples: chunk tiles over a sample's tiles)
        tiles = -(-(11 + 3 - r + 1) // m) * -(-(10 + 2 - r + 1) // m)
        plan = winograd.Winograd(7, 33, 11, 10, 35, 11 + 3 - r + 1, 10 + 2 - r + 1, 1, 2, r, dtype, chunk, m)
        assert int(plan.geo[winograd.S]) == max(1, min(7, chunk // tiles))
    rng = np.random.default_rng(m * 1000 + chunk + r)
    pads = (1, 2, 2, 0)
    x = rng.standard_normal((7, 33, 11, 10)).astype(dtype)
    wt = rng.standard_normal((35, 33, r, r)).astype(dtype)
    dy = rng.standard_normal((7, 35, 11 + 3 - r + 1, 10 + 2 - r + 1)).astype(dtype)
    attrs = _attrs(pads)
    for name, (op_type, inputs), ref in zip(
            ("y", "dx", "dw"),
            (("conv2d", {"in": [x], "weight": [wt]}), ("conv2d_data_grad", {"dy": [dy], "weight": [wt], "like": [x]}),
             ("conv2d_filter_grad", {"dy": [dy], "x": [x], "like": [wt]})),
            _direct64(x, wt, dy, pads)):
        kernel, ins, outs = op_kernel(op_type, inputs, attrs, "numba")
        plan = kernel.info  # a Winograd kernel carries its plan (kernels.Kernel)
        assert (0 if plan is None else int(plan.geo[winograd.M])) == m, name
        kernel(ins, outs)
        tol = 5e-5 if dtype == np.float32 else 1e-12
        assert np.abs(outs[0] - ref).max() <= tol * np.abs(ref).max(), (name, m, chunk)
        first = outs[0].copy()  # again, after the partial last chunk: the forward keeps its tiles' zero border
        kernel(ins, outs)
        assert np.array_equal(outs[0], first), (name, m, chunk)


def test_the_autotune_measures_once_and_its_cached_choice_decides(tmp_path, monkeypatch) -> None:
    """FLOWLAB_WINOGRAD=auto: the first build of a conv times every candidate and keeps the fastest in the cache
    file; a later build (another process: nothing in memory) reads it back without measuring and follows it,
    whatever it says (deterministic given the cache)."""
    monkeypatch.setenv("FLOWLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FLOWLAB_WINOGRAD", "auto")
    monkeypatch.setattr(winograd_conv, "_chosen", {})
    measured = []
    real = winograd_conv._measure
    monkeypatch.setattr(winograd_conv, "_measure", lambda make, ctx: measured.append(real(make, ctx)) or measured[-1])
    rng = np.random.default_rng(9)
    inputs = {"in": [rng.standard_normal((2, 32, 8, 8)).astype(np.float32)],
              "weight": [rng.standard_normal((32, 32, 3, 3)).astype(np.float32)]}
    op_kernel("conv2d", inputs, _attrs((1, 1, 1, 1)), "numba")
    assert len(measured) == 1
    record = measured[0]
    assert set(record["ms"]) == {winograd_conv._name(m, c) for m, c in [(0, 0), *winograd_conv.CANDIDATES]}
    assert record["algorithm"] == min(record["ms"], key=record["ms"].get)
    table = json.loads(winograd_conv._cache_file().read_text())
    (key,) = table
    assert table[key] == record and key in winograd_conv.chosen()

    def fail(make, ctx):
        raise AssertionError("measured again")

    tiny = {"in": [np.ones((1, 2, 4, 4), np.float32)], "weight": [np.ones((2, 2, 3, 3), np.float32)]}
    monkeypatch.setattr(winograd_conv, "_measure", fail)  # too small to time: im2col, unmeasured
    kernel, _, _ = op_kernel("conv2d", tiny, _attrs((1, 1, 1, 1)), "numba")
    assert kernel.info is None  # im2col: no Winograd plan

    monkeypatch.setattr(winograd_conv, "_measure", fail)
    for m, chunk in [(record["m"], record["chunk_tiles"]), (2, 128), (0, 0)]:
        table[key] = {**record, "algorithm": winograd_conv._name(m, chunk), "m": m, "chunk_tiles": chunk}
        winograd_conv._cache_file().write_text(json.dumps(table))
        monkeypatch.setattr(winograd_conv, "_chosen", {})
        kernel, _, _ = op_kernel("conv2d", inputs, _attrs((1, 1, 1, 1)), "numba")
        plan = kernel.info  # a Winograd kernel carries its plan (kernels.Kernel)
        assert (0 if plan is None else int(plan.geo[winograd.M])) == m
        assert winograd_conv.chosen()[key] == table[key]


def _tiles_ref(x, s0, ns, c, cp, pt, pl, plan, size, step):
    """NumPy's gather: d[p, q, tile, ci] = the chunk's x, zero-bordered at (pt, pl), at (ti * step + p,
    tj * step + q), zero from channel c to cp."""
    th, tw = int(plan.geo[winograd.TH]), int(plan.geo[winograd.TW])
    hq, wq = (th - 1) * step + size, (tw - 1) * step + size
    _, _, hs, ws = x.shape
    xpad = np.zeros((ns, cp, hq + hs, wq + ws), x.dtype)
    xpad[:, :c, pt:pt + hs, pl:pl + ws] = x[s0:s0 + ns]
    d = np.empty((size, size, ns, th, tw, cp), x.dtype)
    for p in range(size):
        for q in range(size):
            d[p, q] = xpad[:, :, p:p + th * step:step, q:q + tw * step:step][:, :, :th, :tw].transpose(0, 2, 3, 1)
    return d.reshape(-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, c, hs, ws, r, pads, chunk, m", [
    (3, 33, 11, 10, 5, (1, 2, 2, 0), 16, 4),  # a channel tail, partial tiles, a partial last chunk
    (2, 17, 14, 14, 5, (2, 2, 2, 2), 128, 4),  # LeNet's plane, 17 channels (one whole block and a tail)
    (5, 64, 14, 14, 5, (4, 4, 4, 4), 32, 4),  # the data gradient's padding
    (2, 8, 5, 3, 3, (1, 1, 0, 2), 16, 4),  # fewer channels than a block (float32): value by value
    (2, 40, 3, 3, 3, (1, 1, 1, 1), 16, 4),  # a 9-pixel plane, under a float32 block
    (1, 19, 4, 4, 3, (2, 2, 2, 2), 16, 4),  # 16 pixels: one whole block
    (3, 33, 11, 10, 5, (1, 2, 2, 0), 32, 2),  # F(2x2, 5x5): a pixel in up to 3 x 3 tiles, a partial last chunk
    (3, 20, 9, 7, 3, (0, 2, 1, 1), 16, 2),  # F(2x2, 3x3), no top padding, more at the bottom
])
def test_gather_and_scatter_are_numpys_bit_for_bit(dtype, n, c, hs, ws, r, pads, chunk, m) -> None:
    """The gathers (input tiles at a, m; dy's at m, m) and the scatter, by 64-byte block transposes with the tails
    value by value, against NumPy's indexing: the same bits (they copy), padding channels zero, nothing of y
    outside its planes written. d starts as random bits before each gather (it is shared by x's and dy's tiles in
    the filter gradient): every value of the chunk's tiles is written. Random bits include NaNs with payloads and
    negative zeros."""
    pt, pb, pl, pr = pads
    ho, wo = hs + pt + pb - r + 1, ws + pl + pr - r + 1
    plan = winograd.Winograd(n, c, hs, ws, c, ho, wo, pt, pl, r, dtype, chunk, m)
    g = plan.geo
    m, a, cp, th, tw, s = (int(g[i]) for i in (winograd.M, winograd.A, winograd.CIP, winograd.TH, winograd.TW,
                                               winograd.S))
    rng = np.random.default_rng(c * 100 + hs)
    itype = np.uint32 if dtype == np.float32 else np.uint64
    bits = lambda shape: rng.integers(0, np.iinfo(itype).max, shape, dtype=itype, endpoint=True).view(dtype)
    x, dyy = bits((n, c, hs, ws)), bits((n, c, ho, wo))
    for s0 in range(0, n, s):
        ns = min(s, n - s0)
        t = ns * th * tw
        for src, (h, w), size, step, (top, left), q in ((x, (hs, ws), a, m, (pt, pl), plan.xq),
                                                     (dyy, (ho, wo), m, m, (0, 0), plan.dq)):
            plan.d[:] = bits(plan.d.shape)
            winograd._gather_tiles(src.reshape(-1), s0, ns, c, cp, h, w, top, left, g, size, step, q, plan.d)
            want = _tiles_ref(src, s0, ns, c, cp, top, left, plan, size, step)
            assert np.array_equal(plan.d[:size * size * t * cp].view(itype), want.view(itype)), (s0, size)
        yt = bits(m * m * t * cp)
        y = bits((n, c, ho, wo))
        before = y.copy()
        winograd._scatter_tiles(yt, s0, ns, c, cp, ho, wo, g, y.reshape(-1))
        full = yt.reshape(m, m, ns, th, tw, cp).transpose(2, 5, 3, 0, 4, 1).reshape(ns, cp, th * m, tw * m)
        want = before.copy()
        want[s0:s0 + ns] = full[:, :c, :ho, :wo]
        assert np.array_equal(y.view(itype), want.view(itype)), s0
