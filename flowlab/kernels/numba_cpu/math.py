"""Numba CPU kernels: elementwise math. Same-shape operands run a flat loop over raveled views; broadcasting
operands run an N-d loop over numpy broadcast views (built once per register)."""

from __future__ import annotations

import math as _m

import numpy as np

from ..reference.math import scalar_operand
from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit


@njit
def _add(a, b, o):
    a, b, o = a.ravel(), b.ravel(), o.ravel()
    for i in range(o.size):
        o[i] = a[i] + b[i]


@njit
def _sub(a, b, o):
    a, b, o = a.ravel(), b.ravel(), o.ravel()
    for i in range(o.size):
        o[i] = a[i] - b[i]


@njit
def _mul(a, b, o):
    a, b, o = a.ravel(), b.ravel(), o.ravel()
    for i in range(o.size):
        o[i] = a[i] * b[i]


@njit
def _div(a, b, o):
    a, b, o = a.ravel(), b.ravel(), o.ravel()
    for i in range(o.size):
        o[i] = a[i] / b[i]


@njit
def _idiv(x, y):
    """Integer division rounding toward zero (C's ``/``, as OneFlow); x / 0 gives 0 (as NumPy)."""
    if y == 0:
        return x - x
    q = x // y
    if q * y != x and (x < 0) != (y < 0):
        q += 1
    return q


@njit
def _idiv_flat(a, b, o):
    a, b, o = a.ravel(), b.ravel(), o.ravel()
    for i in range(o.size):
        o[i] = _idiv(a[i], b[i])


@njit
def _idiv_nd(a, b, o):
    for idx in np.ndindex(o.shape):
        o[idx] = _idiv(a[idx], b[idx])


@njit
def _bcast(kind, a, b, o):
    for idx in np.ndindex(o.shape):
        x, y = a[idx], b[idx]
        if kind == 0:
            o[idx] = x + y
        elif kind == 1:
            o[idx] = x - y
        elif kind == 2:
            o[idx] = x * y
        else:
            o[idx] = x / y


_FLAT = {"broadcast_add": (_add, 0), "broadcast_sub": (_sub, 1), "broadcast_mul": (_mul, 2), "broadcast_div": (_div, 3)}


def _binary(op_type: str):
    flat, kind = _FLAT[op_type]

    def factory(ctx: KernelCtx) -> KernelFn:
        out_shape = ctx.out_descs[0].shape
        same_shape = all(d.shape == out_shape for d in ctx.in_descs)
        integer_div = op_type == "broadcast_div" and not ctx.out_descs[0].dtype.is_floating
        if same_shape:
            fn = _idiv_flat if integer_div else flat

            def same(ins, outs):
                fn(ins[0], ins[1], outs[0])

            # fusable: a ResNet's residual adds broke its runs of fused kernels
            return fusable(same, lambda ins, outs: FusedCall(fn, (ins[0], ins[1], outs[0])))
        views: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

        def broadcast(ins, outs):
            key = (id(ins[0]), id(ins[1]))
            if key not in views:  # registers are fixed arrays: build the broadcast views once
                views[key] = (np.broadcast_to(ins[0], out_shape), np.broadcast_to(ins[1], out_shape))
            a, b = views[key]
            if integer_div:
                _idiv_nd(a, b, outs[0])
            else:
                _bcast(kind, a, b, outs[0])

        return broadcast

    return factory


@njit
def _relu(x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = 0 if x[i] < 0 else x[i]  # NaN fails the test and passes through, as np.maximum(x, 0)


@njit
def _sigmoid(x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = 1.0 / (1.0 + _m.exp(-x[i]))


@njit
def _tanh(x, y):
    np.tanh(x.ravel(), y.ravel())


@njit
def _negative(x, y):
    np.negative(x.ravel(), y.ravel())


@njit
def _reciprocal(x, y):
    np.divide(1.0, x.ravel(), y.ravel())


@njit
def _exp(x, y):
    np.exp(x.ravel(), y.ravel())


@njit
def _log(x, y):
    np.log(x.ravel(), y.ravel())


@njit
def _sqrt(x, y):
    np.sqrt(x.ravel(), y.ravel())


@njit
def _square(x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = x[i] * x[i]


@njit
def _sign(x, y):
    np.sign(x.ravel(), y.ravel())


@njit
def _abs(x, y):
    np.abs(x.ravel(), y.ravel())


@njit
def _relu_grad(y, dy, dx):
    y, dy, dx = y.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = dy[i] if y[i] > 0 else 0


@njit
def _sigmoid_grad(y, dy, dx):
    y, dy, dx = y.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = dy[i] * y[i] * (1 - y[i])


@njit
def _tanh_grad(y, dy, dx):
    y, dy, dx = y.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = dy[i] * (1 - y[i] * y[i])


@njit
def _scalar_add(x, s, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = x[i] + s


@njit
def _scalar_mul(x, s, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = x[i] * s


def _unary(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            fn(ins[0], outs[0])

        return fusable(kernel, lambda ins, outs: FusedCall(fn, (ins[0], outs[0])))

    return factory


def _grad(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            fn(ins[0], ins[1], outs[0])

        return fusable(kernel, lambda ins, outs: FusedCall(fn, (ins[0], ins[1], outs[0])))

    return factory


def _scalar(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        operand = scalar_operand(ctx)  # the blob's dtype: no mixed signature

        def kernel(ins, outs):
            fn(ins[0], operand, outs[0])

        return fusable(kernel, lambda ins, outs: FusedCall(fn, (ins[0], operand, outs[0])))

    return factory


@register_kernel("reduce_sum_like", "numba")
def _reduce_sum_like(ctx: KernelCtx) -> KernelFn:
    from ..reference.math import sum_to_shape

    out_shape = ctx.out_descs[0].shape

    def kernel(ins, outs):
        outs[0][...] = sum_to_shape(ins[0], out_shape)  # a reduction: numpy's pairwise sum is the fast path

    return kernel


for _t in _FLAT:
    register_kernel(_t, "numba")(_binary(_t))
for _t, _fn in (("relu", _relu), ("sigmoid", _sigmoid), ("tanh", _tanh), ("negative", _negative),
                ("reciprocal", _reciprocal), ("exp", _exp), ("log", _log), ("sqrt", _sqrt), ("square", _square),
                ("sign", _sign), ("abs", _abs)):
    register_kernel(_t, "numba")(_unary(_fn))
for _t, _fn in (("relu_grad", _relu_grad), ("sigmoid_grad", _sigmoid_grad), ("tanh_grad", _tanh_grad)):
    register_kernel(_t, "numba")(_grad(_fn))
register_kernel("scalar_add", "numba")(_scalar(_scalar_add))
register_kernel("scalar_mul", "numba")(_scalar(_scalar_mul))
