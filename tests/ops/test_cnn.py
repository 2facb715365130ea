"""conv2d, pooling and dropout: kernels in both implementations against direct NumPy loops, gradients against
finite differences, SAME/VALID shapes, and dropout's train/predict behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError
from flowlab.ops.cnn_ops import explicit_pads
from tests.helpers.gradients import check, v

from .helpers import run_op

RNG = np.random.default_rng(11)
IMPLS = ["reference", "numba"]


def conv_loops(x, w, stride, pads, dil, groups):
    """A direct NCHW convolution by loops: the independent reference."""
    pt, pb, pl, pr = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, c, h, wd = xp.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1, (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(oh):
                for j in range(ow):
                    patch = xp[b, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                               j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                    out[b, oc, i, j] = np.sum(patch * w[oc])
    return out


CASES = [  # (x shape, w shape, strides, pads, dilations, groups)
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((1, 4, 9, 9), (6, 2, 3, 2), (2, 1), (0, 1, 2, 0), (1, 2), 2),
    ((2, 2, 5, 5), (2, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", CASES, ids=["same3x3", "strided_dilated_grouped", "1x1"])
def test_conv2d_and_its_adjoint_gradients(impl, case):
    xs, ws, stride, pads, dil, groups = case
    x, w = RNG.standard_normal(xs).astype(np.float32), RNG.standard_normal(ws).astype(np.float32)
    attrs = {"strides": stride, "dilations": dil, "pads": pads, "groups": groups}
    (out,) = run_op("conv2d", {"in": [x], "weight": [w]}, attrs, impl)
    np.testing.assert_allclose(out, conv_loops(x, w, stride, pads, dil, groups), rtol=1e-4, atol=1e-4)
    dy = RNG.standard_normal(out.shape).astype(np.float32)
    (dx,) = run_op("conv2d_data_grad", {"dy": [dy], "weight": [w], "like": [x]}, attrs, impl)
    (dw,) = run_op("conv2d_filter_grad", {"dy": [dy], "x": [x], "like": [w]}, attrs, impl)
    # conv is linear in x and in w: <conv(x, w), dy> = <x, dx> = <w, dw>
    inner = float(np.sum(conv_loops(x, w, stride, pads, dil, groups) * dy))
    assert float(np.sum(x.astype(np.float64) * dx)) == pytest.approx(inner, rel=1e-4)
    assert float(np.sum(w.astype(np.float64) * dw)) == pytest.approx(inner, rel=1e-4)


def pool_loops(x, k, s, pads, is_max):
    pt, pb, pl, pr = pads
    n, c, h, w = x.shape
    oh, ow = (h + pt + pb - k[0]) // s[0] + 1, (w + pl + pr - k[1]) // s[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - pt, j * s[1] - pl
            win = x[:, :, max(r0, 0):min(r0 + k[0], h), max(c0, 0):min(c0 + k[1], w)]
            out[:, :, i, j] = win.max(axis=(2, 3)) if is_max else win.mean(axis=(2, 3))
    return out


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("k, s, pads", [((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (2, 2), (1, 1, 1, 1)),
                                        ((2, 3), (1, 2), (0, 1, 1, 1))])
def test_pooling(impl, kind, k, s, pads):
    x = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
    attrs = {"ksize": k, "strides": s, "pads": pads}
    (y,) = run_op(kind, {"x": [x]}, attrs, impl)
    np.testing.assert_allclose(y, pool_loops(x, k, s, pads, kind == "max_pool2d"), rtol=1e-5, atol=1e-6)
    dy = RNG.standard_normal(y.shape).astype(np.float32)
    (dx,) = run_op(f"{kind}_grad", {"x": [x], "y": [y], "dy": [dy]}, attrs, impl)
    if kind == "avg_pool2d":  # linear: the gradient is the adjoint
        assert float(np.sum(x * dx)) == pytest.approx(float(np.sum(y * dy)), rel=1e-4)
    else:  # each output's gradient lands on its window's maximum
        assert float(dx.sum()) == pytest.approx(float(dy.sum()), rel=1e-4)


def test_same_padding_puts_the_extra_top_left_as_oneflow_does():
    assert explicit_pads("SAME", (7, 6), (3, 3), (2, 2), (1, 1)) == (1, 1, 1, 0)  # OneFlow: SAME is SAME_LOWER
    assert explicit_pads("SAME_LOWER", (7, 6), (3, 3), (2, 2), (1, 1)) == (1, 1, 1, 0)
    assert explicit_pads("SAME_UPPER", (7, 6), (3, 3), (2, 2), (1, 1)) == (1, 1, 0, 1)  # TF's split
    assert explicit_pads((0, 0, 1, 2), (7, 6), (3, 3), (1, 1), (1, 1)) == (1, 1, 2, 2)
    assert explicit_pads([[0, 0], [0, 0], [1, 2], (0, 3)], (7, 6), (3, 3), (1, 1), (1, 1)) == (1, 2, 0, 3)
    assert explicit_pads("SAME", (8, 8), (2, 2), (2, 2), (1, 1)) == (0, 0, 0, 0)
    assert explicit_pads("VALID", (8, 8), (5, 5), (1, 1), (1, 1)) == (0, 0, 0, 0)


def test_conv_and_pool_gradients_by_finite_differences():
    x, w = v(1, 2, 5, 5), v(3, 2, 3, 3)

    def build(b, f):
        y = flow.nn.conv2d(b["x"], b["w"], strides=1, padding="SAME")
        return flow.nn.avg_pool2d(flow.nn.max_pool2d(y, 2, 1, "VALID"), 2, 2, "SAME")

    def forward(s, f):
        y = conv_loops(s["x"], s["w"], (1, 1), (1, 1, 1, 1), (1, 1), 1)
        return pool_loops(pool_loops(y, (2, 2), (1, 1), (0, 0, 0, 0), True), (2, 2), (2, 2), (0, 0, 0, 0), False)

    check({"x": x, "w": w}, build, forward, {}, (1, 3, 2, 2), rtol=1e-5, atol=1e-7)


def test_dropout_in_train_and_predict():
    seen = []

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((200, 50))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(1,), initializer=flow.constant_initializer(1.0))
        y = flow.nn.dropout(x * w, rate=0.25, seed=3)
        flow.watch_diff(y, seen.append)
        loss = flow.math.reduce_sum(y)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return y

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((200, 50))) -> tp.Numpy:
        return flow.nn.dropout(x, rate=0.25)

    x = np.ones((200, 50), np.float32)
    a, b = train(x), train(x)
    for y in (a, b):
        kept = y != 0
        assert 0.72 < kept.mean() < 0.78 and np.allclose(y[kept], 1 / 0.75)
    assert not np.array_equal(a, b)  # a new mask each run
    np.testing.assert_array_equal(predict(x), x)  # identity in predict jobs
    assert not any(op.op_type == "dropout" for op in flow.default_session().job_set.job("predict").ops)


def test_oneflow_paddings_through_the_frontend():
    """SAME (= SAME_LOWER) pads the odd row/column at the top/left; SAME_UPPER at the bottom/right; explicit
    paddings name one entry per NCHW dimension."""
    x = RNG.standard_normal((1, 1, 5, 4)).astype(np.float32)
    w = RNG.standard_normal((1, 1, 2, 2)).astype(np.float32)
    cases = {"SAME": (1, 0, 1, 0), "SAME_LOWER": (1, 0, 1, 0), "SAME_UPPER": (0, 1, 0, 1),
             "explicit": (1, 1, 0, 1)}
    for padding, pads in cases.items():
        flow.clear_default_session()

        @flow.global_function()
        def job(a: tp.Numpy.Placeholder((1, 1, 5, 4))) -> tuple[tp.Numpy, tp.Numpy]:
            f = flow.get_variable("f", shape=(1, 1, 2, 2))
            given = [[0, 0], 0, 1, [0, 1]] if padding == "explicit" else padding  # noqa: B023
            return flow.nn.conv2d(a, f, 1, given), flow.nn.max_pool2d(a, 2, 1, given)

        flow.load_variables({"f": w})
        conv, pool = job(x)
        np.testing.assert_allclose(conv, conv_loops(x, w, (1, 1), pads, (1, 1), 1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(pool, pool_loops(x, (2, 2), (1, 1), pads, True), rtol=1e-6)
    with pytest.raises(ValueError, match="NCHW"):
        explicit_pads([[1, 1], 0, 1, 1], (5, 4), (2, 2), (1, 1), (1, 1))
    flow.clear_default_session()

    @flow.global_function()
    def empty_window(a: tp.Numpy.Placeholder((1, 1, 5, 4))) -> tp.Numpy:
        return flow.nn.avg_pool2d(a, 2, 1, [0, 0, 0, [0, 2]])

    with pytest.raises(OpInferError, match="only padding"):
        empty_window(x)


def test_conv2d_layer_weight_and_bias_names_are_not_scoped():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1, 2, 4, 4))) -> tp.Numpy:
        return flow.layers.conv2d(x, 3, 3, name="c", weight_name="shared_w", bias_name="shared_b")

    job(np.zeros((1, 2, 4, 4), np.float32))
    assert sorted(flow.get_all_variables()) == ["shared_b", "shared_w"]
    ops = {op.name: op.op_type for op in flow.default_session().job_set.job("job").ops}
    assert ops["c"] == "conv2d" and ops["c-bias_add"] == "bias_add"


def test_dropouts_without_a_seed_draw_different_masks():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((40, 40))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(1,), initializer=flow.constant_initializer(1.0))
        a, b = flow.nn.dropout(x * w, rate=0.5), flow.nn.dropout(x * w, rate=0.5)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(a + b))
        return flow.concat([a, b], axis=0)

    out = train(np.ones((40, 40), np.float32))
    assert not np.array_equal(out[:40], out[40:])
