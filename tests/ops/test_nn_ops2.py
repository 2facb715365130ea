"""OneFlow v0.3.4's further nn functions (activations, losses, norms, shape ops, convolutions: flowlab/ops/*2.py):
values against NumPy float64 definitions written here, gradients against central finite differences (through the
real autograd pass, tests/test_gradients.check), both kernel tiers, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
from tests.helpers.gradients import check, v

from .helpers import run_op

RNG = np.random.default_rng(23)
IMPLS = ["reference", "numba"]


def _softplus(x):
    return np.log1p(np.exp(x))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _logsoftmax(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


# (name, flowlab function, NumPy float64 definition); inputs keep away from the kinks at -3, 3, 0, +-1
ACTS = [
    ("elu", lambda x: flow.nn.elu(x, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * (np.exp(x) - 1))),
    ("hardsigmoid", flow.nn.hardsigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    ("hardswish", flow.nn.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hardtanh", lambda x: flow.nn.hardtanh(x, -2.0, 2.5), lambda x: np.clip(x, -2.0, 2.5)),
    ("relu6", flow.nn.relu6, lambda x: np.clip(x, 0, 6)),
    ("swish", lambda x: flow.nn.swish(x, beta=0.7), lambda x: x * _sigmoid(0.7 * x)),
    ("mish", flow.nn.mish, lambda x: x * np.tanh(_softplus(x))),
    ("logsoftmax", lambda x: flow.nn.logsoftmax(x, axis=0), lambda x: _logsoftmax(x, 0)),
]


def _away_from_kinks(shape):
    x = v(*shape, low=-5.0, high=7.0)
    for k in (-3.0, -2.0, 0.0, 2.5, 3.0, 6.0):
        x = np.where(np.abs(x - k) < 0.05, x + 0.1, x)
    return x


@pytest.mark.parametrize("name, op, fn", ACTS, ids=[a[0] for a in ACTS])
def test_activation_gradients_by_finite_differences(name, op, fn):
    x = _away_from_kinks((4, 6))
    check({"x": x}, lambda b, f: op(b["x"]), lambda s, f: fn(s["x"]), {}, (4, 6))


@pytest.mark.parametrize("impl", IMPLS)
def test_activation_kernels_at_the_branch_points(impl):
    # OneFlow's kernels: the comparisons at the bounds are <= -3 / >= 3 (forward), open (-3, 3) for the gradients
    x = np.array([-4.0, -3.0, -1.0, 0.0, 1.0, 3.0, 4.0], np.float32)
    dy = np.full_like(x, 2.0)
    np.testing.assert_allclose(run_op("hardsigmoid", {"x": [x]}, {}, impl)[0], [0, 0, 1 / 3, 0.5, 2 / 3, 1, 1],
                               rtol=1e-6)
    np.testing.assert_allclose(run_op("hardsigmoid_grad", {"x": [x], "dy": [dy]}, {}, impl)[0],
                               [0, 0, 1 / 3, 1 / 3, 1 / 3, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(run_op("hardswish", {"x": [x]}, {}, impl)[0], [0, 0, -1 / 3, 0, 2 / 3, 3, 4],
                               rtol=1e-6)
    np.testing.assert_allclose(run_op("hardswish_grad", {"x": [x], "dy": [dy]}, {}, impl)[0],
                               [0, 0, 1 / 3, 1, 5 / 3, 2, 2], rtol=1e-6)
    y = run_op("hardtanh", {"x": [x]}, {"min_val": -1.0, "max_val": 0.1}, impl)[0]
    np.testing.assert_array_equal(y, np.float32([-1, -1, -1, 0, 0.1, 0.1, 0.1]))
    # y on a bound (0.1 rounded to float32 by the forward) has no gradient: the bound is compared in float32
    np.testing.assert_array_equal(run_op("hardtanh_grad", {"y": [y], "dy": [dy]}, {"min_val": -1.0, "max_val": 0.1},
                                         impl)[0], [0, 0, 0, 2, 0, 0, 0])
    np.testing.assert_allclose(run_op("elu", {"x": [x]}, {"alpha": 2.0}, impl)[0],
                               np.where(x > 0, x, 2 * np.expm1(x.astype(np.float64))), rtol=1e-6)


def test_hardtanh_bounds_must_be_ordered():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: flow.typing.Numpy.Placeholder((3,))):
        return flow.nn.hardtanh(x, min_val=1.0, max_val=1.0)

    with pytest.raises(ValueError, match="max_val should be larger than min_val"):
        job(np.zeros(3, np.float32))


# -- losses ------------------------------------------------------------------------------------------------------
def _np_bce_logits(x, t, w, pw):
    lw = (pw - 1) * t + 1
    return w * ((1 - t) * x + lw * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)))


def _np_triplet(a, p_, n, margin, p, eps):
    d1 = (np.abs(a - p_ + eps) ** p).sum(1) ** (1 / p)
    d2 = (np.abs(a - n + eps) ** p).sum(1) ** (1 / p)
    return np.maximum(margin + d1 - d2, 0)


def _np_smooth_l1(d, beta):
    a = np.abs(d)
    return np.where(a < beta, 0.5 * a * a / max(beta, 1e-300), a - 0.5 * beta)


LOSSES = [
    ("mse_sum", lambda b, f: flow.nn.MSELoss(b["x"], f["t"], reduction="sum"),
     lambda s, f: np.sum((f["t"] - s["x"]) ** 2), {}),
    ("l1_none", lambda b, f: flow.nn.L1Loss(b["x"], f["t"], reduction="none"),
     lambda s, f: np.abs(f["t"] - s["x"]), {}),
    ("bce_weighted_mean", lambda b, f: flow.nn.BCELoss(b["x"], f["t"], f["w"]),
     lambda s, f: np.mean(-f["w"] * (f["t"] * np.log(s["x"]) + (1 - f["t"]) * np.log(1 - s["x"]))), {"prob": True}),
    ("bce_logits_pos_weight", lambda b, f: flow.nn.BCEWithLogitsLoss(b["x"], f["t"], f["w"], f["pw"], "none"),
     lambda s, f: _np_bce_logits(s["x"], f["t"], f["w"], f["pw"]), {"logits": True}),
    ("margin_ranking", lambda b, f: flow.nn.MarginRankingLoss(b["x"], f["t"], f["sgn"], margin=0.3, reduction="none"),
     lambda s, f: np.maximum(0.3 - f["sgn"] * (s["x"] - f["t"]), 0), {}),
    ("triplet_p2", lambda b, f: flow.nn.TripletMarginLoss(b["x"], f["t"], f["w"], margin=2.0, reduction="none"),
     lambda s, f: _np_triplet(s["x"], f["t"], f["w"], 2.0, 2.0, 1e-6), {}),
    ("triplet_p1_5", lambda b, f: flow.nn.TripletMarginLoss(b["x"], f["t"], f["w"], margin=2.0, p=1.5,
                                                            reduction="sum"),
     lambda s, f: np.sum(_np_triplet(s["x"], f["t"], f["w"], 2.0, 1.5, 1e-6)), {}),
    ("kldiv_log_target", lambda b, f: flow.nn.KLDivLoss(b["x"], f["t"], log_target=True, reduction="none"),
     lambda s, f: np.exp(f["t"]) * (f["t"] - s["x"]), {}),
    ("kldiv", lambda b, f: flow.nn.KLDivLoss(b["x"], f["w"], reduction="none"),
     lambda s, f: np.where(f["w"] > 0, f["w"] * (np.log(np.where(f["w"] > 0, f["w"], 1)) - s["x"]), 0),
     {"zero_w": True}),
    ("smooth_l1_beta_half", lambda b, f: flow.smooth_l1_loss(b["x"], f["t"], 0.5),
     lambda s, f: _np_smooth_l1(s["x"] - f["t"], 0.5), {}),
    ("smooth_l1_beta_0", lambda b, f: flow.smooth_l1_loss(b["x"], f["t"], 0.0),
     lambda s, f: np.abs(s["x"] - f["t"]), {}),
]


@pytest.mark.parametrize("name, build, forward, opts", LOSSES, ids=[x[0] for x in LOSSES])
def test_loss_gradients_by_finite_differences(name, build, forward, opts):
    shape = (3, 4)
    x = v(*shape, low=0.1, high=0.9) if opts.get("prob") else v(*shape, low=-2, high=2)
    feeds = {"t": v(*shape, low=0.05, high=0.95), "w": v(*shape, low=0.2, high=1.0), "pw": v(4, low=0.5, high=2.0),
             "sgn": np.sign(v(*shape))}
    if opts.get("zero_w"):
        feeds["w"][0, :2] = 0.0  # KLDivLoss keeps only positive targets' terms
    # keep |x - t| away from smooth_l1's beta and from 0 (the kinks), and margins away from the hinge
    d = x - feeds["t"]
    x = np.where(np.abs(np.abs(d) - 0.5) < 0.05, x + 0.1, x)
    x = np.where(np.abs(x - feeds["t"]) < 0.05, x + 0.1, x)
    out_shape = np.shape(forward({"x": x}, feeds)) or (1,)
    check({"x": x}, build, lambda s, f: np.reshape(forward(s, f), out_shape), feeds, out_shape, rtol=1e-5,
          atol=1e-7)


@pytest.mark.parametrize("impl", IMPLS)
def test_sparse_cross_entropy_kernels_clamp_at_oneflows_log_threshold(impl):
    p = np.array([[0.2, 0.8, 0.0], [0.5, 0.25, 0.25]], np.float32)
    labels = np.array([2, 1], np.int32)
    (out,) = run_op("sparse_cross_entropy", {"prediction": [p], "label": [labels]}, {"depth": 3}, impl)
    np.testing.assert_allclose(out, [-np.log(np.float32(1e-20)), -np.log(0.25)], rtol=1e-6)
    dy = np.array([2.0, 3.0], np.float32)
    (dx,) = run_op("sparse_cross_entropy_grad", {"prediction": [p], "label": [labels], "dy": [dy]}, {"depth": 3},
                   impl)
    np.testing.assert_allclose(dx, [[0, 0, -2 / np.float32(1e-20)], [0, -12, 0]], rtol=1e-6)
    with pytest.raises(IndexError, match="out of range"):
        run_op("sparse_cross_entropy", {"prediction": [p], "label": [np.array([0, 3], np.int32)]}, {"depth": 3},
               impl)


def test_loss_errors_name_the_argument():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: flow.typing.Numpy.Placeholder((2, 3)), y: flow.typing.Numpy.Placeholder((3, 2))):
        return flow.nn.MSELoss(x, y)

    with pytest.raises(ValueError, match="MSELoss: the input .* and the target .* must have one shape"):
        job(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def job2(x: flow.typing.Numpy.Placeholder((2, 3))):
        return flow.nn.L1Loss(x, x, reduction="avg")

    with pytest.raises(ValueError, match="'avg' is not a valid value for L1Loss's reduction"):
        job2(np.zeros((2, 3), np.float32))


# -- norms and shape layers -----------------------------------------------------------------------------------
def _np_norm(x, axes, eps):
    m, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    return (x - m) / np.sqrt(var + eps)


NORMS = [
    ("layer_norm", (3, 4, 5), lambda b, f: flow.nn.layer_norm(b["x"], gamma=b["g"], beta=b["b"], begin_norm_axis=1,
                                                             begin_params_axis=1),
     lambda s, f: _np_norm(s["x"], (1, 2), 1e-5) * s["g"] + s["b"], {"g": (4, 5), "b": (4, 5)}),
    ("instance_norm2d", (2, 3, 2, 3), lambda b, f: flow.nn.InstanceNorm2d(b["x"], eps=1e-3, affine=False),
     lambda s, f: _np_norm(s["x"], (2, 3), 1e-3), {}),
    ("group_norm", (2, 6, 3), lambda b, f: flow.nn.GroupNorm(b["x"], num_groups=3, affine=False),
     lambda s, f: _np_norm(s["x"].reshape(2, 3, -1), (2,), 1e-5).reshape(2, 6, 3), {}),
    ("pixel_shufflev2", (1, 12, 2, 3), lambda b, f: flow.nn.PixelShufflev2(b["x"], 2, 3),
     lambda s, f: s["x"].reshape(1, 2, 2, 3, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 9), {}),
]


@pytest.mark.parametrize("name, shape, build, forward, params", NORMS, ids=[n[0] for n in NORMS])
def test_norm_gradients_by_finite_differences(name, shape, build, forward, params):
    variables = {"x": v(*shape, low=-2, high=2), **{k: v(*s, low=0.5, high=1.5) for k, s in params.items()}}
    out_shape = forward(variables, {}).shape
    check(variables, build, forward, {}, out_shape, rtol=1e-5, atol=1e-7)


def test_prelu_layer_values_and_gradients():
    # alpha's gradient is checked by the port (tests/oneflow/test_prelu.py, OneFlow's NumPy reference)
    x = v(2, 3, 2, 2)
    x = np.where(np.abs(x) < 0.05, 0.1, x)

    def build(b, f):
        return flow.layers.prelu(b["x"], alpha_initializer=flow.constant_initializer(0.3), shared_axes=(2, 3))

    flow.clear_default_session()
    check({"x": x}, build, lambda s, f: np.where(s["x"] > 0, s["x"], 0.3 * s["x"]), {}, (2, 3, 2, 2), rtol=1e-5,
          atol=1e-7)


# -- convolutions built over conv2d -------------------------------------------------------------------------------
def _np_conv_cf(x, w, strides, dilations, pads, groups):
    """Channels-first N-d convolution from the definition (a loop over output positions and taps)."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    k = w.shape[2:]
    out = [(xp.shape[2 + i] - dilations[i] * (k[i] - 1) - 1) // strides[i] + 1 for i in range(nd)]
    cg, fg = w.shape[1], w.shape[0] // groups
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for pos in np.ndindex(*out):
        for tap in np.ndindex(*k):
            src = tuple(pos[i] * strides[i] + tap[i] * dilations[i] for i in range(nd))
            for g in range(groups):
                xs = xp[(slice(None), slice(g * cg, (g + 1) * cg), *src)]
                y[(slice(None), slice(g * fg, (g + 1) * fg), *pos)] += xs @ w[(slice(g * fg, (g + 1) * fg),
                                                                              slice(None), *tap)].T
    return y


CONVS = [
    ("conv1d_explicit_groups", (2, 4, 9), (6, 2, 3),
     lambda b, f: flow.nn.conv1d(b["x"], b["w"], 2, [[0, 0], [0, 0], [2, 1]], dilations=2, groups=2),
     lambda s, f: _np_conv_cf(s["x"], s["w"], (2,), (2,), [(2, 1)], 2)),
    ("conv1d_nwc_same", (2, 7, 3), (4, 2, 3),
     lambda b, f: flow.nn.conv1d(b["x"], b["w"], 2, "SAME", data_format="NWC"),
     lambda s, f: _np_conv_cf(s["x"].transpose(0, 2, 1), s["w"].transpose(0, 2, 1), (2,), (1,), [(1, 0)],
                              1).transpose(0, 2, 1)),
    ("conv3d_strided_dilated", (1, 2, 7, 5, 6), (4, 1, 2, 2, 3),
     lambda b, f: flow.nn.conv3d(b["x"], b["w"], [2, 1, 2], [[0, 0], [0, 0], [1, 0], [0, 1], [1, 1]],
                                 dilations=[2, 1, 1], groups=2),
     lambda s, f: _np_conv_cf(s["x"], s["w"], (2, 1, 2), (2, 1, 1), [(1, 0), (0, 1), (1, 1)], 2)),
    ("conv3d_ndhwc_same_lower", (1, 5, 4, 4, 2), (3, 3, 2, 2, 2),
     lambda b, f: flow.nn.conv3d(b["x"], b["w"], 2, "SAME", data_format="NDHWC"),
     lambda s, f: _np_conv_cf(s["x"].transpose(0, 4, 1, 2, 3), s["w"].transpose(0, 4, 1, 2, 3), (2, 2, 2), (1, 1, 1),
                              [(1, 1), (0, 0), (0, 0)], 1).transpose(0, 2, 3, 4, 1)),
]


@pytest.mark.parametrize("name, x_shape, w_shape, build, forward", CONVS, ids=[c[0] for c in CONVS])
def test_conv1d_conv3d_against_the_definition_and_finite_differences(name, x_shape, w_shape, build, forward):
    variables = {"x": v(*x_shape), "w": v(*w_shape)}
    out_shape = forward(variables, {}).shape
    check(variables, build, forward, {}, out_shape, rtol=1e-5, atol=1e-7)


def _np_deconv(x, w, stride, pads, out_hw):
    """conv2d_transpose from the definition: each input pixel scatters its filter-weighted copy into the output."""
    n, _ci, h, wd = x.shape
    kh, kw = w.shape[2:]
    full = np.zeros((n, w.shape[1], (h - 1) * stride + kh + 4, (wd - 1) * stride + kw + 4))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum("nc,cokl->nokl",
                                                                                         x[:, :, i, j], w)
    return full[:, :, pads[0]:pads[0] + out_hw[0], pads[1]:pads[1] + out_hw[1]]


@pytest.mark.parametrize("padding, out_hw, pads", [("SAME", (6, 6), (0, 0)), ("SAME", (5, 5), (1, 1)),
                                                   ("VALID", (8, 8), (0, 0))])
def test_conv2d_transpose_against_the_definition_and_finite_differences(padding, out_hw, pads):
    # stride 2, 3x3 filter, 3x3 input: a 7x7 full output; SAME to 6x6 crops 0 before and 1 after (the odd one
    # after, TensorFlow's), to 5x5 1 and 1; VALID to 8x8 leaves one extra row/column (OneFlow's output_padding)
    variables = {"x": v(2, 3, 3, 3), "w": v(3, 2, 3, 3)}

    def build(b, f):
        return flow.nn.conv2d_transpose(b["x"], b["w"], output_shape=(2, 2, *out_hw), strides=2, padding=padding)

    check(variables, build, lambda s, f: _np_deconv(s["x"], s["w"], 2, pads, out_hw), {}, (2, 2, *out_hw),
          rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("interpolation, size, data_format", [("bilinear", (2, 3), "NCHW"), ("nearest", 3, "NHWC"),
                                                              ("bilinear", (1, 2), "NHWC")])
def test_upsample_2d_values_and_finite_differences(interpolation, size, data_format):
    hs, ws = (size, size) if isinstance(size, int) else size

    def axis(n, s):  # half-pixel centres, edge-clamped (TensorFlow's and OneFlow's), as a matrix
        m = np.zeros((n * s, n))
        for i in range(n * s):
            if interpolation == "nearest":
                m[i, i // s] = 1
            else:
                src = min(max((i + 0.5) / s - 0.5, 0), n - 1)
                lo = int(src)
                m[i, lo] += 1 - (src - lo)
                m[i, min(lo + 1, n - 1)] += src - lo
        return m

    shape = (2, 3, 4, 5) if data_format == "NCHW" else (2, 4, 5, 3)

    def forward(s, f):
        x = s["x"] if data_format == "NCHW" else s["x"].transpose(0, 3, 1, 2)
        y = np.einsum("ih,nchw,jw->ncij", axis(4, hs), x, axis(5, ws))
        return y if data_format == "NCHW" else y.transpose(0, 2, 3, 1)

    variables = {"x": v(*shape)}
    # atol 1e-6: OneFlow (and flowlab) compute the source positions and weights in float32, so a float64 blob's
    # weights are float32's (1/3 to ~3e-8)
    check(variables, lambda b, f: flow.layers.upsample_2d(b["x"], size, data_format, interpolation),
          forward, {}, forward(variables, {}).shape, rtol=1e-5, atol=1e-6)


def test_conv2d_layer_nhwc_weight_layout_bias_and_gradients():
    # flow.layers.conv2d(data_format="NHWC"): OneFlow's channels_last weight (filters, kh, kw, in), the bias on C
    x, w, b = v(2, 5, 4, 3), v(4, 3, 2, 3), v(4)

    def build(bl, f):
        return flow.layers.conv2d(bl["x"], 4, (3, 2), strides=(2, 1), padding="SAME", data_format="NHWC",
                                  activation=flow.math.tanh, name="c")

    def forward(s, f):
        y = _np_conv_cf(s["x"].transpose(0, 3, 1, 2), s["c-weight"].transpose(0, 3, 1, 2), (2, 1), (1, 1),
                        [(1, 1), (1, 0)], 1) + s["c-bias"][None, :, None, None]
        return np.tanh(y).transpose(0, 2, 3, 1)

    flow.clear_default_session()
    variables = {"x": x, "c-weight": w, "c-bias": b}
    check(variables, build, forward, {}, forward(variables, {}).shape, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("axis", [0, -1])
def test_l2_normalize_values_and_finite_differences(axis):
    def forward(s, f):
        return s["x"] / np.sqrt(np.maximum(np.sum(s["x"] ** 2, axis=axis, keepdims=True), 1e-12))

    variables = {"x": v(3, 4)}
    check(variables, lambda b, f: flow.math.l2_normalize(b["x"], axis=axis), forward, {}, (3, 4), rtol=1e-5,
          atol=1e-7)


def test_random_mask_like_is_an_int8_mask_at_the_rate_and_repeats_with_its_seed():
    masks = []
    for _ in range(2):
        flow.clear_default_session()

        @flow.global_function()
        def job(x: flow.typing.Numpy.Placeholder((50, 40))):
            return flow.nn.random_mask_like(x, rate=0.3, seed=7, name="m")

        masks.append(job(np.zeros((50, 40), np.float32)).get().numpy())
    assert masks[0].dtype == np.int8 and set(np.unique(masks[0])) <= {0, 1}
    assert abs(1 - masks[0].mean() - 0.3) < 0.05
    np.testing.assert_array_equal(masks[0], masks[1])  # a fresh session draws the same first mask
