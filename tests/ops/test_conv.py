"""conv2d, pooling, dropout and batch normalization: every kernel (NumPy reference and Numba) against direct
loops on random configurations (forward and both gradients), the shapes SAME/VALID give, errors, the layers'
variables, dropout's seeded determinism, and the moving statistics of batch normalization."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

from .helpers import run_op

RNG = np.random.default_rng(5)
IMPLS = ["reference", "numba"]


def random_conv_config(seed):
    """A random (n, c, h, w), (o, c/g, kh, kw), strides, (top, bottom, left, right), dilations, groups that fits."""
    r = np.random.default_rng(seed)
    groups = int(r.choice([1, 1, 2, 3]))
    c, o = groups * int(r.integers(1, 3)), groups * int(r.integers(1, 3))
    kh, kw = (int(k) for k in r.integers(1, 4, 2))
    dil = tuple(int(d) for d in r.integers(1, 3, 2))
    stride = tuple(int(s) for s in r.integers(1, 3, 2))
    pads = tuple(int(p) for p in r.integers(0, 3, 4))
    h = int(r.integers(dil[0] * (kh - 1) + 1, 9))
    w = int(r.integers(dil[1] * (kw - 1) + 1, 9))
    return (int(r.integers(1, 3)), c, h, w), (o, c // groups, kh, kw), stride, pads, dil, groups


def windows(xp, i, j, kh, kw, stride, dil):
    return xp[..., i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
              j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]


def conv_loops(x, w, stride, pads, dil, groups):
    """Direct convolution, output position by output position, and its two adjoints (for a given dy)."""
    pt, pb, pl, pr = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    o, cg, kh, kw = w.shape
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups
    out = np.zeros((x.shape[0], o, oh, ow))
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = windows(xp[:, g * cg:(g + 1) * cg], i, j, kh, kw, stride, dil)
                out[:, oc, i, j] = np.sum(patch * w[oc], axis=(1, 2, 3))

    def grads(dy):
        dxp, dw = np.zeros_like(xp), np.zeros(w.shape)
        for oc in range(o):
            g = oc // og
            for i in range(oh):
                for j in range(ow):
                    d = dy[:, oc, i, j][:, None, None, None]
                    windows(dxp[:, g * cg:(g + 1) * cg], i, j, kh, kw, stride, dil)[...] += d * w[oc]
                    dw[oc] += np.sum(d * windows(xp[:, g * cg:(g + 1) * cg], i, j, kh, kw, stride, dil), axis=0)
        return dxp[:, :, pt:xp.shape[2] - pb, pl:xp.shape[3] - pr], dw

    return out, grads


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_kernels_against_loops(impl, seed, dtype):
    xs, ws, stride, pads, dil, groups = random_conv_config(seed)
    x, w = RNG.standard_normal(xs).astype(dtype), RNG.standard_normal(ws).astype(dtype)
    attrs = {"strides": stride, "dilations": dil, "pads": pads, "groups": groups}
    want, grads = conv_loops(x, w, stride, pads, dil, groups)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-10}
    (out,) = run_op("conv2d", {"in": [x], "weight": [w]}, attrs, impl)
    assert out.dtype == dtype
    np.testing.assert_allclose(out, want, **tol)
    dy = RNG.standard_normal(out.shape).astype(dtype)
    want_dx, want_dw = grads(dy.astype(np.float64))
    (dx,) = run_op("conv2d_data_grad", {"dy": [dy], "weight": [w], "like": [x]}, attrs, impl)
    (dw,) = run_op("conv2d_filter_grad", {"dy": [dy], "x": [x], "like": [w]}, attrs, impl)
    np.testing.assert_allclose(dx, want_dx, **tol)
    np.testing.assert_allclose(dw, want_dw, **tol)


def pool_loops(x, k, s, pads, kind):
    """Pooling over the in-bounds part of each window; the gradient of a max goes to the window's first max."""
    pt, pb, pl, pr = pads
    n, c, h, w = x.shape
    oh, ow = (h + pt + pb - k[0]) // s[0] + 1, (w + pl + pr - k[1]) // s[1] + 1
    y = np.zeros((n, c, oh, ow))
    cells = {}
    for i in range(oh):
        for j in range(ow):
            r0, r1 = max(i * s[0] - pt, 0), min(i * s[0] - pt + k[0], h)
            c0, c1 = max(j * s[1] - pl, 0), min(j * s[1] - pl + k[1], w)
            win = x[:, :, r0:r1, c0:c1].reshape(n, c, -1).astype(np.float64)
            y[:, :, i, j] = win.max(-1) if kind == "max" else win.mean(-1)
            cells[i, j] = (r0, r1, c0, c1, win.argmax(-1))

    def grad(dy):
        dx = np.zeros(x.shape)
        for (i, j), (r0, r1, c0, c1, first) in cells.items():
            if kind == "avg":
                dx[:, :, r0:r1, c0:c1] += dy[:, :, i, j][:, :, None, None] / ((r1 - r0) * (c1 - c0))
                continue
            for a in range(n):
                for b in range(c):
                    dx[a, b, r0 + first[a, b] // (c1 - c0), c0 + first[a, b] % (c1 - c0)] += dy[a, b, i, j]
        return dx

    return y, grad


POOLS = [((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (2, 2), (1, 1, 1, 1)), ((3, 2), (1, 2), (2, 0, 0, 1)),
         ((1, 1), (2, 3), (0, 0, 0, 0)), ((4, 4), (3, 3), (1, 2, 2, 1))]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k, s, pads", POOLS)
def test_pool_kernels_against_loops(impl, kind, k, s, pads):
    x = RNG.standard_normal((2, 3, 7, 8))
    if kind == "max":
        x[0, 0] = 0.5  # a plane of ties: the first maximum of each window takes the gradient
    attrs = {"ksize": k, "strides": s, "pads": pads}
    want, grad = pool_loops(x, k, s, pads, kind)
    (y,) = run_op(f"{kind}_pool2d", {"x": [x]}, attrs, impl)
    np.testing.assert_allclose(y, want, rtol=1e-12)
    dy = RNG.standard_normal(y.shape)
    (dx,) = run_op(f"{kind}_pool2d_grad", {"x": [x], "y": [y], "dy": [dy]}, attrs, impl)
    np.testing.assert_allclose(dx, grad(dy), rtol=1e-12, atol=1e-12)


def bn_np(x3, gamma, beta, eps, mean=None, var=None):
    m = x3.mean(axis=(0, 2)) if mean is None else mean
    var = x3.var(axis=(0, 2)) if var is None else var
    return (x3 - m[:, None]) / np.sqrt(var[:, None] + eps) * gamma[:, None] + beta[:, None]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape, axis", [((4, 3, 5), 1), ((6, 4), 1), ((2, 3, 2, 2), 1), ((5, 2), 0), ((2, 3, 4), 2)])
def test_normalization_kernels(impl, shape, axis):
    """Forward in both modes, moving averages in place, and the gradient against finite differences (float64)."""
    x = RNG.standard_normal(shape) * 2 + 1
    c = shape[axis]
    x3 = x.reshape(int(np.prod(shape[:axis])), c, -1)  # (outer, channels, inner)
    mm, mv = RNG.standard_normal(c), RNG.uniform(0.5, 2, c)
    gamma, beta = RNG.uniform(0.5, 2, c), RNG.standard_normal(c)
    for training in (True, False):
        ins = {"x": [x], "moving_mean": [mm.copy()], "moving_variance": [mv.copy()], "gamma": [gamma], "beta": [beta]}
        y, mean, inv = run_op("normalization", ins, {"axis": axis, "training": training, "momentum": 0.9,
                                                     "epsilon": 1e-3}, impl)
        stats = (None, None) if training else (mm, mv)
        np.testing.assert_allclose(y.reshape(x3.shape), bn_np(x3, gamma, beta, 1e-3, *stats), rtol=1e-10)
        m, var = (x3.mean(axis=(0, 2)), x3.var(axis=(0, 2))) if training else (mm, mv)
        np.testing.assert_allclose(mean, m, rtol=1e-12)
        np.testing.assert_allclose(inv, 1 / np.sqrt(var + 1e-3), rtol=1e-12)
        np.testing.assert_allclose(ins["moving_mean"][0], 0.9 * mm + 0.1 * m if training else mm, rtol=1e-12)
        # the moving variance takes the unbiased variance, as cuDNN's BatchNormalizationForwardTraining (OneFlow
        # v0.3.4's only normalization kernel)
        unbiased = x3.var(axis=(0, 2), ddof=1) if training else None
        np.testing.assert_allclose(ins["moving_variance"][0], 0.9 * mv + 0.1 * unbiased if training else mv,
                                   rtol=1e-12)
    # batch-statistics gradient by central differences of sum(bn(x) * dy)
    ins = {"x": [x], "moving_mean": [mm.copy()], "moving_variance": [mv.copy()], "gamma": [gamma], "beta": [beta]}
    _, mean, inv = run_op("normalization", ins, {"axis": axis, "training": True}, impl)
    dy3 = RNG.standard_normal(x3.shape)
    dy = dy3.reshape(x.shape)
    dx, dgamma, dbeta = run_op("normalization_grad", {"x": [x], "dy": [dy], "mean": [mean], "inv_variance": [inv],
                                                      "gamma": [gamma]}, {"axis": axis}, impl)
    f = {"x": x3, "gamma": gamma, "beta": beta}
    for name, got in (("x", dx.reshape(x3.shape)), ("gamma", dgamma), ("beta", dbeta)):
        want = np.zeros_like(f[name])
        for idx in np.ndindex(want.shape):
            for sign in (1, -1):
                s = {k: a.copy() for k, a in f.items()}
                s[name][idx] += sign * 1e-6
                want[idx] += sign * np.sum(bn_np(s["x"], s["gamma"], s["beta"], 1e-3) * dy3) / 2e-6
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=name)


def shape_of(build, in_shape):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder(in_shape)) -> tp.Numpy:
        return build(x)

    return job(np.zeros(in_shape, np.float32)).shape


@pytest.mark.parametrize("size, k, s, d", [(7, 3, 1, 1), (7, 3, 2, 1), (8, 2, 2, 1), (9, 3, 3, 2), (5, 5, 2, 1),
                                           (6, 1, 4, 1), (3, 5, 1, 1)])
def test_same_and_valid_shapes(size, k, s, d):
    def conv(padding):
        def build(x):
            w = flow.get_variable("w", shape=(2, 1, k, k), initializer=flow.constant_initializer(1.0))
            return flow.nn.conv2d(x, w, strides=s, padding=padding, dilations=d)
        return build

    in_shape = (1, 1, size, size + 1)
    same = (-(-size // s), -(-(size + 1) // s))
    assert shape_of(conv("SAME"), in_shape) == (1, 2, *same)
    flow.clear_default_session()
    assert shape_of(lambda x: flow.nn.max_pool2d(x, k, s, "SAME"), in_shape) == (1, 1, *same)
    eff = d * (k - 1) + 1
    if eff <= size:
        flow.clear_default_session()
        valid = ((size - eff) // s + 1, (size + 1 - eff) // s + 1)
        assert shape_of(conv("VALID"), in_shape) == (1, 2, *valid)
        flow.clear_default_session()
        pooled = ((size - k) // s + 1, (size + 1 - k) // s + 1)
        assert shape_of(lambda x: flow.nn.avg_pool2d(x, k, s, "VALID"), in_shape) == (1, 1, *pooled)


@pytest.mark.parametrize("build, error, words", [
    (lambda x: flow.nn.conv2d(x, flow.get_variable("w", shape=(4, 3, 3, 3)), 1, "SAME", groups=2), OpInferError,
     "group"),
    (lambda x: flow.nn.conv2d(x, flow.get_variable("w", shape=(3, 4, 3, 3)), 1, "SAME", groups=2), OpInferError,
     "divisible"),
    (lambda x: flow.nn.conv2d(x, flow.get_variable("w", shape=(2, 4, 7, 7)), 1, "VALID"), OpInferError, "fit"),
    (lambda x: flow.nn.conv2d(x, flow.get_variable("w", shape=(2, 4, 3, 3)), 1, "FULL"), ValueError, "padding"),
    (lambda x: flow.nn.conv2d(x, flow.get_variable("w", shape=(2, 4, 3, 3)), 1, "SAME", data_format="NWHC"),
     ValueError, "data_format must be"),
    (lambda x: flow.nn.max_pool2d(x, 7, 1, "VALID"), OpInferError, "fit"),
    (lambda x: flow.nn.avg_pool2d(flow.reshape(x, (4, 36)), 2, 2, "VALID"), OpInferError, "NCHW"),
    (lambda x: flow.layers.batch_normalization(x, axis=4), OpInferError, "axis"),
], ids=["in_channels", "out_not_divisible", "kernel_too_big", "bad_padding", "bad_data_format", "window_too_big",
        "pool_rank", "bn_axis"])
def test_bad_input_is_a_clear_error(build, error, words):
    with pytest.raises(error, match=words):
        shape_of(build, (1, 4, 6, 6))


def test_conv2d_layer_variables_and_forward():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 4, 5, 5))) -> tp.Numpy:
        y = flow.layers.conv2d(x, 6, (3, 2), strides=(2, 1), padding="VALID", groups=2, name="c1",
                               bias_initializer=flow.constant_initializer(0.5))
        return flow.layers.conv2d(y, 3, 1, use_bias=False, name="c2")

    x = RNG.standard_normal((2, 4, 5, 5)).astype(np.float32)
    out = job(x)
    var = flow.get_all_variables()
    assert sorted(var) == ["c1-bias", "c1-weight", "c2-weight"]
    assert var["c1-weight"].shape == (6, 2, 3, 2) and var["c1-bias"].shape == (6,)
    bound = np.sqrt(6 / (2 * 3 * 2 + 6 * 3 * 2))  # xavier_uniform by default, fans of (out, in/groups, kh, kw)
    assert 0 < np.abs(var["c1-weight"]).max() <= bound
    y, _ = conv_loops(x, var["c1-weight"], (2, 1), (0, 0, 0, 0), (1, 1), 2)
    want, _ = conv_loops((y + 0.5).astype(np.float32), var["c2-weight"], (1, 1), (0, 0, 0, 0), (1, 1), 1)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def dropout_runs(seed, runs=3, rate=0.3):
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((16, 16))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(1,), initializer=flow.constant_initializer(1.0))
        y = flow.nn.dropout(x * w, rate=rate, seed=seed)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y))
        return y

    return [train(np.ones((16, 16), np.float32)) for _ in range(runs)]


def test_dropout_is_deterministic_given_its_seed():
    a, b, c = dropout_runs(1), dropout_runs(1), dropout_runs(2)
    for x, y in zip(a, b):  # the same seed gives the same sequence of masks in a new session
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], a[1])  # a new mask each run
    assert not np.array_equal(a[0], c[0])  # another seed, other masks
    for y in a:
        np.testing.assert_allclose(np.unique(y), [0, 1 / 0.7], rtol=1e-6)


def test_dropout_rate_zero_is_the_identity_and_rate_one_an_error():
    assert not any(np.any(y != 1) for y in dropout_runs(0, runs=1, rate=0.0))
    with pytest.raises(OpInferError, match="rate"):
        dropout_runs(0, runs=1, rate=1.0)


def bn_jobs(**kw):
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 3, 2, 2))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(1,), initializer=flow.constant_initializer(1.0))
        y = flow.layers.batch_normalization(x * w, axis=1, momentum=0.8, name="bn", **kw)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * y))
        return y

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((8, 3, 2, 2))) -> tp.Numpy:
        return flow.layers.batch_normalization(x, axis=1, momentum=0.8, name="bn", **kw)

    return train, predict


def test_batch_normalization_moving_statistics_over_steps():
    train, predict = bn_jobs()
    mm, mv = np.zeros(3), np.ones(3)
    for _ in range(3):
        x = (RNG.standard_normal((8, 3, 2, 2)) * np.array([1, 2, 3])[None, :, None, None] + 1).astype(np.float32)
        y = train(x)
        m, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
        np.testing.assert_allclose(y, (x - m[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-3),
                                   rtol=1e-4, atol=1e-5)
        # the unbiased batch variance, as cuDNN's BatchNormalizationForwardTraining (OneFlow v0.3.4 has no CPU one)
        mm, mv = 0.8 * mm + 0.2 * m, 0.8 * mv + 0.2 * x.var(axis=(0, 2, 3), ddof=1)
    stats = flow.get_all_variables()
    np.testing.assert_allclose(stats["bn-moving_mean"], mm, rtol=1e-5)
    np.testing.assert_allclose(stats["bn-moving_variance"], mv, rtol=1e-5)
    np.testing.assert_allclose(predict(x), (x - mm[None, :, None, None]) / np.sqrt(mv[None, :, None, None] + 1e-3),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(flow.get_all_variables()["bn-moving_mean"], mm, rtol=1e-5)  # predict keeps them


@pytest.mark.parametrize("kw", [{"trainable": False}, {"training": False}])
def test_batch_normalization_frozen_in_a_train_job(kw):
    """OneFlow forces training off when trainable=False: moving statistics normalize and stay as they are."""
    train, _ = bn_jobs(**kw)
    x = (RNG.standard_normal((8, 3, 2, 2)) + 2).astype(np.float32)
    np.testing.assert_allclose(train(x), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    stats = flow.get_all_variables()
    np.testing.assert_array_equal(stats["bn-moving_mean"], 0)
    np.testing.assert_array_equal(stats["bn-moving_variance"], 1)


def test_batch_normalization_without_center_and_scale_has_no_beta_and_gamma():
    train, _ = bn_jobs(center=False, scale=False)
    train(np.ones((8, 3, 2, 2), np.float32))
    assert sorted(k for k in flow.get_all_variables() if k.startswith("bn")) == ["bn-moving_mean",
                                                                                 "bn-moving_variance"]
