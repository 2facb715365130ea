"""Gradients of conv2d, layers.conv2d, max/avg pooling, dropout and batch normalization against central finite
differences of independent NumPy forwards, through the real autograd pass and runtime, in float64 and under
both kernel implementations (the harness of test_gradients: one SGD step with lr 1 gives d(loss)/dw)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.gradients import RNG, check, flowlab_grads, v


def conv_np(x, w, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1):
    """NCHW convolution by sliding windows and einsum (independent of the kernels' index gathers)."""
    pt, pb, pl, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    o, cg, kh, kw = w.shape
    win = sliding_window_view(xp, (dil[0] * (kh - 1) + 1, dil[1] * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::stride[0], ::stride[1], ::dil[0], ::dil[1]]  # (n, c, oh, ow, kh, kw)
    og = o // groups
    return np.concatenate([np.einsum("ncijab,ocab->noij", win[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og])
                           for g in range(groups)], axis=1)


def pool_np(x, k, s, pads, kind):
    """Pooling over windows of the NaN-padded input: padding takes no part in a max or an average."""
    pt, pb, pl, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=np.nan)
    win = sliding_window_view(xp, k, axis=(2, 3))[:, :, ::s[0], ::s[1]]
    return np.nanmax(win, axis=(4, 5)) if kind == "max" else np.nanmean(win, axis=(4, 5))


def tf_same(size, k, s, d=1):
    """(before, after) of a SAME padding that has no odd total (so TF's and OneFlow's splits agree)."""
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    assert total % 2 == 0, "pick a case with an even total padding"
    return total // 2, total // 2


CONV_CASES = {  # x shape, w shape, strides, padding given to flow.nn.conv2d, pads for NumPy, dilations, groups
    "same_3x3": ((2, 2, 5, 5), (3, 2, 3, 3), 1, "SAME", (1, 1, 1, 1), 1, 1),
    "valid_strided": ((1, 2, 7, 6), (2, 2, 3, 2), (2, 1), "VALID", (0, 0, 0, 0), 1, 1),
    "dilated_grouped": ((1, 4, 7, 7), (4, 2, 2, 3), 1, "VALID", (0, 0, 0, 0), (2, 1), 2),
    "same_strided_dilated": ((1, 2, 9, 9), (2, 2, 3, 3), 2, "SAME", (2, 2, 2, 2), 2, 1),
    "depthwise": ((1, 3, 5, 4), (6, 1, 3, 3), 1, "VALID", (0, 0, 0, 0), 1, 3),
}


@pytest.mark.parametrize("case", list(CONV_CASES), ids=list(CONV_CASES))
def test_conv2d_gradients(kernel_impl, case):
    xs, ws, strides, padding, pads, dil, groups = CONV_CASES[case]
    s2 = (strides, strides) if isinstance(strides, int) else strides
    d2 = (dil, dil) if isinstance(dil, int) else dil
    x, w = v(*xs), v(*ws)
    out_shape = conv_np(x, w, s2, pads, d2, groups).shape

    def build(b, f):
        return flow.nn.conv2d(b["x"], b["w"], strides=strides, padding=padding, dilations=dil, groups=groups)

    check({"x": x, "w": w}, build, lambda s, f: conv_np(s["x"], s["w"], s2, pads, d2, groups), {}, out_shape,
          rtol=1e-5, atol=1e-7)


def test_conv2d_layer_gradients_with_bias_and_activation():
    x, w, b = v(2, 3, 6, 5), v(4, 3, 3, 3), v(4)

    def build(bl, f):  # the harness made "conv-weight" and "conv-bias"; the layer reuses them by name
        return flow.layers.conv2d(bl["x"], 4, 3, strides=1, padding="SAME", activation=flow.math.tanh, name="conv")

    def forward(s, f):
        return np.tanh(conv_np(s["x"], s["conv-weight"], pads=(1, 1, 1, 1)) + s["conv-bias"][None, :, None, None])

    check({"x": x, "conv-weight": w, "conv-bias": b}, build, forward, {}, (2, 4, 6, 5), rtol=1e-5, atol=1e-7)


POOL_CASES = {  # ksize, strides, padding, pads for NumPy (a SAME case with an even total)
    "2x2_s2_valid": ((2, 2), (2, 2), "VALID", (0, 0, 0, 0)),
    "3x3_s2_same": ((3, 3), (2, 2), "SAME", (*tf_same(7, 3, 2), *tf_same(7, 3, 2))),
    "2x3_s1x2_valid": ((2, 3), (1, 2), "VALID", (0, 0, 0, 0)),
    "3x3_s1_same": ((3, 3), (1, 1), "SAME", (1, 1, 1, 1)),
}


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", list(POOL_CASES), ids=list(POOL_CASES))
def test_pool_gradients(kernel_impl, kind, case):
    k, s, padding, pads = POOL_CASES[case]
    x = v(2, 2, 7, 7)
    out_shape = pool_np(x, k, s, pads, kind).shape
    op = flow.nn.max_pool2d if kind == "max" else flow.nn.avg_pool2d
    check({"x": x}, lambda b, f: op(b["x"], ksize=k, strides=s, padding=padding),
          lambda st, f: pool_np(st["x"], k, s, pads, kind), {}, out_shape, rtol=1e-5, atol=1e-7)


def test_dropout_gradient_is_the_mask_times_the_scale(kernel_impl):
    """The mask is random, so no finite differences: d(sum(y * w))/dx = w * mask / (1 - rate), and the mask is
    what the returned y shows (x is all ones)."""
    rate, shape = 0.4, (30, 20)
    weight = RNG.standard_normal(shape)
    seen = []

    def build(b, f):
        y = flow.nn.dropout(b["x"], rate=rate, seed=7)
        flow.watch(y, seen.append)
        return y

    grads = flowlab_grads({"x": np.ones(shape)}, build, {"weight": weight})
    (y,) = seen
    kept = y != 0
    assert 0.45 < kept.mean() < 0.75
    np.testing.assert_allclose(y[kept], 1 / (1 - rate))
    np.testing.assert_allclose(grads["x"], weight * y, rtol=1e-12)


def bn_np(x, gamma, beta, axis, eps=1e-3, mean=None, var=None):
    axes = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    m = x.mean(axis=axes, keepdims=True) if mean is None else mean.reshape(shape)
    var = x.var(axis=axes, keepdims=True) if var is None else var.reshape(shape)
    return (x - m) / np.sqrt(var + eps) * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("shape, axis", [((4, 3, 2, 2), 1), ((6, 5), -1), ((3, 2, 4), 2)])
def test_batch_normalization_gradients_in_training(kernel_impl, shape, axis):
    c = shape[axis]
    x, gamma, beta = v(*shape), v(c, low=0.5, high=1.5), v(c)

    def build(b, f):
        return flow.layers.batch_normalization(b["x"], axis=axis, name="bn")

    check({"x": x, "bn-gamma": gamma, "bn-beta": beta}, build,
          lambda s, f: bn_np(s["x"], s["bn-gamma"], s["bn-beta"], axis), {}, shape, rtol=1e-5, atol=1e-7)


def test_batch_normalization_gradients_with_moving_statistics(kernel_impl):
    """training=False in a train job: the moving statistics normalize, so y is affine in x."""
    x, gamma, beta = v(4, 3, 2), v(3, low=0.5, high=1.5), v(3)
    mean, var = np.array([0.2, -0.1, 0.4]), np.array([0.5, 1.5, 2.0])

    def build(b, f):
        return flow.layers.batch_normalization(b["x"], axis=1, training=False, name="bn")

    variables = {"x": x, "bn-gamma": gamma, "bn-beta": beta, "bn-moving_mean": mean, "bn-moving_variance": var}
    feeds = {"weight": RNG.standard_normal(x.shape)}
    got = flowlab_grads(variables, build, feeds)
    for name in ("bn-moving_mean", "bn-moving_variance"):  # not trainable, and not updated with training off
        np.testing.assert_array_equal(got[name], 0)
    eps, w = 1e-6, feeds["weight"]
    for name in ("x", "bn-gamma", "bn-beta"):
        want = np.zeros_like(variables[name])
        for idx in np.ndindex(want.shape):
            for sign in (1, -1):
                s = {**variables, name: variables[name].copy()}
                s[name][idx] += sign * eps
                want[idx] += sign * np.sum(bn_np(s["x"], s["bn-gamma"], s["bn-beta"], 1, mean=mean, var=var) * w)
        np.testing.assert_allclose(got[name], want / (2 * eps), rtol=1e-5, atol=1e-7, err_msg=name)


def test_lenet_block_gradients_end_to_end():
    """conv -> relu -> max pool -> batch norm -> avg pool, all in one backward pass."""
    x, w = v(2, 1, 6, 6), v(3, 1, 3, 3)

    def build(b, f):
        y = flow.math.relu(flow.nn.conv2d(b["x"], b["w"], 1, "SAME"))
        y = flow.nn.max_pool2d(y, 2, 2, "VALID")
        y = flow.layers.batch_normalization(y, axis=1, name="bn")
        return flow.nn.avg_pool2d(y, 3, 1, "SAME")

    def forward(s, f):
        y = np.maximum(conv_np(s["x"], s["w"], pads=(1, 1, 1, 1)), 0)
        y = pool_np(y, (2, 2), (2, 2), (0, 0, 0, 0), "max")
        y = bn_np(y, np.ones(3), np.zeros(3), 1)
        return pool_np(y, (3, 3), (1, 1), (1, 1, 1, 1), "avg")

    check({"x": x, "w": w}, build, forward, {}, (2, 3, 3, 3), rtol=1e-5, atol=1e-7)


def test_predict_job_has_no_dropout_and_frozen_batch_norm():
    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((4, 3, 2, 2), dtype=flow.float64)) -> tp.Numpy:
        y = flow.layers.batch_normalization(flow.nn.dropout(x, rate=0.5), axis=1, name="bn")
        return y

    x = v(4, 3, 2, 2)
    np.testing.assert_allclose(predict(x), x / np.sqrt(1 + 1e-3), rtol=1e-12)
    ops = flow.default_session().job_set.job("predict").ops
    (norm,) = [op for op in ops if op.op_type == "normalization"]
    assert norm.attrs["training"] is False and norm.name == "bn"
    assert not any(op.op_type == "dropout" for op in ops)


def test_train_job_computes_no_data_gradient_for_a_conv_on_the_input():
    """LeNet's conv1 reads the images: its backward is a filter gradient only (issue 13: at batch 100 its data
    gradient would cost a GEMM and a col2im per sample for nothing). conv2's input is trained through: its data
    gradient is the only one, shaped like conv1's activation."""

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2, 1, 8, 8))) -> tp.Numpy:
        h = flow.layers.conv2d(x, 3, 3, padding="SAME", activation=flow.nn.relu, name="c1")
        h = flow.layers.conv2d(h, 4, 3, padding="SAME", name="c2")
        loss = flow.math.reduce_mean(h * h, name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    train(v(2, 1, 8, 8).astype(np.float32))
    ops = flow.default_session().job_set.job("train").ops
    types = [op.op_type for op in ops]
    assert types.count("conv2d") == 2 and types.count("conv2d_filter_grad") == 2
    (data_grad,) = [op for op in ops if op.op_type == "conv2d_data_grad"]
    c1_out = next(op for op in ops if op.name == "c1-activation").outputs
    assert data_grad.inputs["like"][0] in [lbn for lbns in c1_out.values() for lbn in lbns]
