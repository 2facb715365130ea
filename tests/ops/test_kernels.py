"""Every op's kernels (Numba and NumPy reference) against an independent NumPy computation, random shapes."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import run_op

RNG = np.random.default_rng(1234)
IMPLS = ["reference", "numba"]


def r(*shape, dtype=np.float32, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(dtype)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


ELEMENTWISE = [
    ("relu", lambda x: np.maximum(x, 0)), ("sigmoid", sigmoid), ("tanh", np.tanh), ("negative", lambda x: -x),
    ("exp", np.exp), ("square", lambda x: x * x), ("sign", np.sign), ("abs", np.abs),
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op_type, expected", ELEMENTWISE, ids=[n for n, _ in ELEMENTWISE])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary(impl, op_type, expected, dtype):
    x = r(3, 4, 5, dtype=dtype)
    (y,) = run_op(op_type, {"x": [x]}, {}, impl)
    np.testing.assert_allclose(y, expected(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    assert y.dtype == dtype


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op_type, expected", [("log", np.log), ("sqrt", np.sqrt), ("reciprocal", lambda x: 1 / x)])
def test_unary_positive_domain(impl, op_type, expected):
    x = r(7, 3, low=0.1, high=3.0)
    np.testing.assert_allclose(run_op(op_type, {"x": [x]}, {}, impl)[0], expected(x), rtol=1e-5)


BINARY = [("broadcast_add", np.add), ("broadcast_sub", np.subtract), ("broadcast_mul", np.multiply),
          ("broadcast_div", np.divide)]
SHAPES = [((4, 5), (4, 5)), ((4, 5), (5,)), ((3, 1, 5), (1, 4, 1)), ((2, 3), (1,)), ((1,), (6, 2))]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op_type, fn", BINARY, ids=[n for n, _ in BINARY])
@pytest.mark.parametrize("shapes", SHAPES, ids=[f"{a}x{b}" for a, b in SHAPES])
def test_binary_broadcasting(impl, op_type, fn, shapes):
    x, y = r(*shapes[0]), r(*shapes[1], low=0.5, high=2.0)
    (z,) = run_op(op_type, {"x": [x], "y": [y]}, {}, impl)
    np.testing.assert_allclose(z, fn(x, y), rtol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("y_shape", [(3, 4), (4,)], ids=["same", "broadcast"])
def test_binary_on_ints(impl, dtype, y_shape):
    x = RNG.integers(-9, 9, (3, 4)).astype(dtype)
    y = RNG.choice(np.array([-4, -3, -1, 1, 2, 5]), y_shape).astype(dtype)
    np.testing.assert_array_equal(run_op("broadcast_add", {"x": [x], "y": [y]}, {}, impl)[0], x + y)
    np.testing.assert_array_equal(run_op("broadcast_mul", {"x": [x], "y": [y]}, {}, impl)[0], x * y)
    # Integer division truncates toward zero (C's `/`, as OneFlow's kernels), not NumPy's floor.
    (q,) = run_op("broadcast_div", {"x": [x], "y": [y]}, {}, impl)
    assert q.dtype == dtype
    np.testing.assert_array_equal(q, np.trunc(x.astype(np.float64) / y).astype(dtype))


@pytest.mark.parametrize("impl", IMPLS)
def test_integer_division_by_zero_gives_zero(impl):
    x, y = np.array([7, -7, 0, 5], np.int32), np.array([0, 0, 0, -2], np.int32)
    np.testing.assert_array_equal(run_op("broadcast_div", {"x": [x], "y": [y]}, {}, impl)[0], [0, 0, 0, -2])


@pytest.mark.parametrize("impl", IMPLS)
def test_scalar_ops_keep_the_dtype(impl):
    x = r(5, 2)
    np.testing.assert_allclose(run_op("scalar_add", {"x": [x]}, {"operand": 1.5}, impl)[0], x + 1.5, rtol=1e-6)
    np.testing.assert_allclose(run_op("scalar_mul", {"x": [x]}, {"operand": -3.0}, impl)[0], x * -3.0, rtol=1e-6)
    step = np.array([41], np.int64)
    out = run_op("scalar_add", {"x": [step]}, {"operand": 1}, impl)[0]
    assert out.dtype == np.int64 and out.tolist() == [42]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul(impl, ta, tb):
    a, b = r(7, 5), r(5, 3)
    a_in, b_in = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    out = run_op("matmul", {"a": [a_in], "b": [b_in]}, {"transpose_a": ta, "transpose_b": tb}, impl)[0]
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("impl", IMPLS)
def test_batched_matmul_and_alpha(impl):
    a, b = r(2, 3, 4, 5), r(2, 3, 6, 5)
    out = run_op("matmul", {"a": [a], "b": [b]}, {"transpose_b": True, "alpha": 0.5}, impl)[0]
    np.testing.assert_allclose(out, 0.5 * a @ np.swapaxes(b, -1, -2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("impl", IMPLS)
def test_bias_add(impl):
    a, b = r(2, 3, 4, 4), r(3)
    np.testing.assert_allclose(run_op("bias_add", {"a": [a], "b": [b]}, {"axis": 1}, impl)[0],
                               a + b[None, :, None, None], rtol=1e-6)
    a2, b2 = r(6, 5), r(5)
    np.testing.assert_allclose(run_op("bias_add", {"a": [a2], "b": [b2]}, {"axis": -1}, impl)[0], a2 + b2)


@pytest.mark.parametrize("impl", IMPLS)
def test_softmax_and_its_grad(impl):
    x, dy = r(4, 3, 7, low=-5, high=5), r(4, 3, 7)
    (y,) = run_op("softmax", {"in": [x]}, {}, impl)
    np.testing.assert_allclose(y, softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-7)
    (dx,) = run_op("softmax_grad", {"y": [y], "dy": [dy]}, {}, impl)
    np.testing.assert_allclose(dx, y * (dy - (dy * y).sum(-1, keepdims=True)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_sparse_softmax_cross_entropy(impl, label_dtype):
    logits, labels = r(6, 10, low=-4, high=4), RNG.integers(0, 10, 6).astype(label_dtype)
    prob, loss = run_op("sparse_softmax_cross_entropy", {"prediction": [logits], "label": [labels]}, {}, impl)
    p = softmax(logits.astype(np.float64))
    np.testing.assert_allclose(prob, p, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loss, -np.log(p[np.arange(6), labels]), rtol=1e-5)
    dy = r(6)
    (dx,) = run_op("sparse_softmax_cross_entropy_grad", {"prob": [prob], "label": [labels], "dy": [dy]}, {}, impl)
    onehot = np.eye(10)[labels]
    np.testing.assert_allclose(dx, (p - onehot) * dy[:, None], rtol=1e-4, atol=1e-6)


REDUCTIONS = [("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max)]
AXES = [None, 0, 2, (0, 2), (1, 2), -1]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op_type, fn", REDUCTIONS, ids=[n for n, _ in REDUCTIONS])
@pytest.mark.parametrize("axis", AXES, ids=[str(a) for a in AXES])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(impl, op_type, fn, axis, keepdims):
    x = r(3, 4, 5)
    (y,) = run_op(op_type, {"input_tensor": [x]}, {"axis": axis, "keepdims": keepdims}, impl)
    want = fn(x.astype(np.float64), axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(y, np.reshape(want, y.shape), rtol=1e-5, atol=1e-6)
    assert y.shape == (want.shape if want.ndim else (1,))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op_type, fn", REDUCTIONS, ids=[n for n, _ in REDUCTIONS])
@pytest.mark.parametrize("axis", [(0, 2, 3), (0, 3), (0, 1, 3)], ids=str)
def test_reductions_around_kept_axes(impl, op_type, fn, axis):
    """A conv bias gradient's sum over N, H and W of NCHW (kept axes between reduced ones), with an inf in one
    channel and a NaN in another reaching only their own outputs."""
    x = r(4, 3, 5, 6)
    x[2, 1, 3, 4], x[0, 2, 0, 5] = np.inf, np.nan
    (y,) = run_op(op_type, {"input_tensor": [x]}, {"axis": axis, "keepdims": False}, impl)
    want = fn(x.astype(np.float64), axis=axis)
    np.testing.assert_allclose(y, np.reshape(want, y.shape), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
def test_argmax(impl):
    x = r(4, 3, 6)
    (y,) = run_op("argmax", {"in": [x]}, {}, impl)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, np.argmax(x, axis=-1))


@pytest.mark.parametrize("impl", IMPLS)
def test_reshape_transpose_identity_cast(impl):
    x = r(2, 3, 4)
    np.testing.assert_array_equal(run_op("reshape", {"in": [x]}, {"shape": (4, -1)}, impl)[0], x.reshape(4, 6))
    perm = (2, 0, 1)
    np.testing.assert_array_equal(run_op("transpose", {"input": [x]}, {"perm": perm}, impl)[0], x.transpose(perm))
    np.testing.assert_array_equal(run_op("identity", {"in": [x]}, {}, impl)[0], x)
    from flowlab.ir.dtype import int32

    cast = run_op("cast", {"in": [x * 3]}, {"dtype": int32}, impl)[0]
    assert cast.dtype == np.int32
    np.testing.assert_array_equal(cast, (x * 3).astype(np.int32))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_and_split_like(impl, axis):
    parts = [r(2, 3, 4), r(2, 3, 4) * 10, r(2, 3, 4) * 100]
    shapes = [list(p.shape) for p in parts]
    for i, p in enumerate(parts):  # vary the concat axis length
        shapes[i][axis] = i + 1
        parts[i] = p[tuple(slice(0, s) for s in shapes[i])].copy()
    (out,) = run_op("concat", {"in": parts}, {"axis": axis}, impl)
    np.testing.assert_array_equal(out, np.concatenate(parts, axis=axis))
    back = run_op("split_like", {"in": [out], "like": parts}, {"axis": axis}, impl)
    for got, want in zip(back, parts):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("impl", IMPLS)
def test_constant_and_like(impl):
    from flowlab.ir.dtype import float32

    (c,) = run_op("constant", {}, {"value": 2.5, "dtype": float32, "shape": (2, 3)}, impl)
    np.testing.assert_array_equal(c, np.full((2, 3), 2.5, np.float32))
    x = r(3, 2)
    np.testing.assert_array_equal(run_op("zeros_like", {"like": [x]}, {}, impl)[0], np.zeros_like(x))
    np.testing.assert_array_equal(run_op("ones_like", {"like": [x]}, {}, impl)[0], np.ones_like(x))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("padding", [1, [2, 0, 1, 2], [0, 1, 1, 0]])
def test_pads_and_their_grads(impl, padding):
    x = r(2, 3, 4, 5)
    pads = [padding] * 4 if isinstance(padding, int) else padding
    left, right, top, bottom = pads
    widths = ((0, 0), (0, 0), (top, bottom), (left, right))
    attrs = {"padding": tuple(pads)}
    np.testing.assert_array_equal(run_op("reflection_pad2d", {"x": [x]}, attrs, impl)[0], np.pad(x, widths, "reflect"))
    np.testing.assert_array_equal(run_op("zero_pad2d", {"x": [x]}, attrs, impl)[0], np.pad(x, widths))
    # The gradient of a pad is its adjoint: <pad(x), dy> == <x, pad_grad(dy)>.
    dy = r(*np.pad(x, widths).shape).astype(np.float64)
    for kind, mode in (("reflection_pad2d", "reflect"), ("zero_pad2d", "constant")):
        (dx,) = run_op(f"{kind}_grad", {"dy": [dy]}, attrs, impl)
        assert np.sum(np.pad(x.astype(np.float64), widths, mode) * dy) == pytest.approx(np.sum(x * dx), rel=1e-9)


@pytest.mark.parametrize("impl", IMPLS)
def test_reduce_helpers(impl):
    x = r(3, 4, 5)
    (y,) = run_op("reduce_sum_like", {"x": [x], "like": [r(4, 1)]}, {}, impl)
    np.testing.assert_allclose(y, x.sum(axis=(0, 2)).reshape(4, 1), rtol=1e-5)
    (b,) = run_op("broadcast_like", {"x": [r(3, 5)], "like": [x]}, {"broadcast_axes": (1,)}, impl)
    assert b.shape == (3, 4, 5) and np.all(b == b[:, :1, :])


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("bad", [-1, 5])
def test_sparse_xent_refuses_out_of_range_labels(impl, bad):
    logits, labels = r(3, 5), np.array([0, bad, 2], np.int32)
    with pytest.raises(IndexError, match=rf"label {bad} \(at flat index 1\) is out of range for 5 classes"):
        run_op("sparse_softmax_cross_entropy", {"prediction": [logits], "label": [labels]}, {}, impl)
    with pytest.raises(IndexError, match=rf"label {bad} .* labels must be in \[0, 5\)"):
        run_op("sparse_softmax_cross_entropy_grad", {"prob": [logits], "label": [labels], "dy": [r(3)]}, {}, impl)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
def test_dtype_generic_ops(impl, dtype):
    x = (r(3, 4, 5, dtype=np.float64) * 10).astype(dtype)
    y = (r(3, 2, 5, dtype=np.float64) * 10).astype(dtype)
    for axis in (None, 1, (0, 2)):
        (s,) = run_op("reduce_sum", {"input_tensor": [x]}, {"axis": axis, "keepdims": False}, impl)
        assert s.dtype == dtype
        np.testing.assert_allclose(s, np.reshape(x.sum(axis=axis), s.shape), rtol=1e-12)
    (am,) = run_op("argmax", {"in": [x]}, {}, impl)
    np.testing.assert_array_equal(am, x.argmax(-1))
    np.testing.assert_array_equal(run_op("concat", {"in": [x, y]}, {"axis": 1}, impl)[0], np.concatenate([x, y], 1))
    np.testing.assert_array_equal(run_op("transpose", {"input": [x]}, {"perm": (1, 2, 0)}, impl)[0],
                                  x.transpose(1, 2, 0))
    np.testing.assert_array_equal(run_op("identity", {"in": [x]}, {}, impl)[0], x)
    np.testing.assert_array_equal(run_op("scalar_mul", {"x": [x]}, {"operand": 3}, impl)[0], x * 3)
    from flowlab.ir.dtype import float32

    np.testing.assert_array_equal(run_op("cast", {"in": [x]}, {"dtype": float32}, impl)[0], x.astype(np.float32))
    if dtype == np.float64:
        a, b = r(6, 4, dtype=dtype), r(4, 3, dtype=dtype)
        out = run_op("matmul", {"a": [a], "b": [b]}, {}, impl)[0]
        assert out.dtype == np.float64
        np.testing.assert_allclose(out, a @ b, rtol=1e-12)
