"""Each public op function alone in a real job (trace, compile, Plan, runtime) against NumPy, in both kernel
modes (the ``kernel_impl`` fixture sets FLOWLAB_KERNELS)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
from tests.helpers.ops_table import run_job

RNG = np.random.default_rng(21)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def i32(high, *shape):
    return RNG.integers(0, high, shape).astype(np.int32)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


CASES = [
    ("add", lambda a, b: flow.math.add(a, b), np.add, lambda: (f32(3, 4), f32(4))),
    ("subtract", lambda a, b: flow.math.subtract(a, b), np.subtract, lambda: (f32(3, 1), f32(1, 5))),
    ("multiply", lambda a, b: flow.math.multiply(a, b), np.multiply, lambda: (f32(2, 3), f32(2, 3))),
    ("divide", lambda a, b: flow.math.divide(a, b), np.divide, lambda: (f32(4, 2), f32(2) + 3)),
    ("scalar_forms", lambda a: 3.0 - a * 2 + 1 / (a * a + 1) - a / 4, lambda a: 3 - a * 2 + 1 / (a * a + 1) - a / 4,
     lambda: (f32(5),)),
    ("negative", lambda a: -a, np.negative, lambda: (f32(3, 2),)),
    ("relu", flow.nn.relu, lambda a: np.maximum(a, 0), lambda: (f32(4, 4),)),
    ("math.relu", flow.math.relu, lambda a: np.maximum(a, 0), lambda: (f32(7),)),
    ("sigmoid", flow.math.sigmoid, lambda a: 1 / (1 + np.exp(-a)), lambda: (f32(3, 3),)),
    ("tanh", flow.math.tanh, np.tanh, lambda: (f32(3, 3),)),
    ("reshape", lambda a: flow.reshape(a, [-1, 6]), lambda a: a.reshape(-1, 6), lambda: (f32(2, 3, 4),)),
    ("transpose", lambda a: flow.transpose(a, perm=[1, 2, 0]), lambda a: a.transpose(1, 2, 0),
     lambda: (f32(2, 3, 4),)),
    ("concat", lambda a, b: flow.concat([a, b, a], axis=1), lambda a, b: np.concatenate([a, b, a], 1),
     lambda: (f32(2, 3), f32(2, 1))),
    ("identity", flow.identity, lambda a: a, lambda: (f32(3, 2),)),
    ("cast", lambda a: flow.cast(a, flow.float64), lambda a: a.astype(np.float64), lambda: (f32(4),)),
    ("cast_int", lambda a: flow.cast(flow.cast(a, flow.int32), flow.float), lambda a: np.trunc(a) * 1.0,
     lambda: (f32(6) * 5,)),
    ("constant", lambda a: a + flow.constant(2.5, dtype=flow.float, shape=(2, 1)), lambda a: a + 2.5,
     lambda: (f32(2, 3),)),
    ("zeros_like", lambda a: flow.zeros_like(a) + a * 0 + 1, lambda a: np.ones_like(a), lambda: (f32(2, 2),)),
    ("ones_like", flow.ones_like, np.ones_like, lambda: (f32(3),)),
    ("matmul", lambda a, b: flow.matmul(a, b), np.matmul, lambda: (f32(3, 4), f32(4, 5))),
    ("matmul_ta_tb", lambda a, b: flow.matmul(a, b, transpose_a=True, transpose_b=True, alpha=2.0),
     lambda a, b: 2 * a.T @ b.T, lambda: (f32(4, 3), f32(5, 4))),
    ("batch_matmul", lambda a, b: flow.matmul(a, b, transpose_b=True), lambda a, b: a @ np.swapaxes(b, -1, -2),
     lambda: (f32(2, 3, 4), f32(2, 5, 4))),
    ("broadcast_matmul", lambda a, b: flow.matmul(a, b), np.matmul, lambda: (f32(2, 3, 4), f32(4, 5))),
    ("bias_add", lambda a, b: flow.nn.bias_add(a, b), lambda a, b: a + b[None, :, None],
     lambda: (f32(2, 3, 4), f32(3))),
    ("bias_add_nhwc", lambda a, b: flow.nn.bias_add(a, b, data_format="NHWC"), lambda a, b: a + b,
     lambda: (f32(2, 3, 4), f32(4))),
    ("softmax", flow.nn.softmax, softmax, lambda: (f32(3, 6),)),
    ("softmax_axis0", lambda a: flow.nn.softmax(a, axis=0), lambda a: softmax(a, 0), lambda: (f32(3, 6),)),
    ("sparse_xent", lambda lab, x: flow.nn.sparse_softmax_cross_entropy_with_logits(lab, x),
     lambda lab, x: -np.log(softmax(x)[np.arange(len(lab)), lab]), lambda: (i32(5, 4), f32(4, 5))),
    ("sparse_xent_labels_n1", lambda lab, x: flow.nn.sparse_softmax_cross_entropy_with_logits(lab, x),
     lambda lab, x: -np.log(softmax(x)[np.arange(len(lab)), lab[:, 0]]), lambda: (i32(5, 4, 1), f32(4, 5))),
    ("reduce_sum", lambda a: flow.math.reduce_sum(a, axis=[0, 2]), lambda a: a.sum((0, 2)), lambda: (f32(2, 3, 4),)),
    ("reduce_sum_all", flow.math.reduce_sum, lambda a: a.sum().reshape(1), lambda: (f32(2, 3),)),
    ("reduce_mean_keepdims", lambda a: flow.math.reduce_mean(a, axis=1, keepdims=True),
     lambda a: a.mean(1, keepdims=True), lambda: (f32(2, 3, 4),)),
    ("reduce_max", lambda a: flow.math.reduce_max(a, axis=-1), lambda a: a.max(-1), lambda: (f32(4, 5),)),
    ("argmax", lambda a: flow.cast(flow.math.argmax(a), flow.float), lambda a: a.argmax(-1) * 1.0,
     lambda: (f32(4, 6),)),
    ("argmax_axis1", lambda a: flow.cast(flow.argmax(a, axis=1), flow.float), lambda a: a.argmax(1) * 1.0,
     lambda: (f32(2, 5, 3),)),
    ("reflection_pad2d", lambda a: flow.reflection_pad2d(a, padding=1),
     lambda a: np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)), "reflect"), lambda: (f32(2, 1, 3, 3),)),
    ("zero_pad2d", lambda a: flow.zero_pad2d(a, padding=[1, 0, 2, 1]),
     lambda a: np.pad(a, ((0, 0), (0, 0), (2, 1), (1, 0))), lambda: (f32(1, 2, 3, 3),)),
]


@pytest.mark.parametrize("build, expected, make", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_op_in_a_job(kernel_impl, build, expected, make):
    arrays = make()
    out = run_job(build, *arrays)
    want = expected(*[a.astype(np.float64) if a.dtype == np.float32 else a for a in arrays])
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_integer_blobs_divide_exactly(kernel_impl):
    a = np.array([7, -7, 9, -1], np.int32)
    out = run_job(lambda x: flow.concat([x / 2, 7 / (x + 10), x * 3 - 1, flow.math.divide(x, x + 10)], axis=0), a)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.concatenate([[3, -3, 4, 0], [0, 2, 0, 0], a * 3 - 1, [0, -2, 0, 0]]))


def test_integer_constants_stay_exact(kernel_impl):
    big = 2**53 + 1
    out = run_job(lambda x: flow.constant(big, dtype=flow.int64, shape=(2,)) + flow.cast(x, flow.int64),
                  np.zeros(2, np.int32))
    assert out.dtype == np.int64 and out.tolist() == [big, big]
