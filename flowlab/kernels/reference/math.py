"""NumPy reference kernels: elementwise math and its gradients."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel

BINARY = {"broadcast_add": np.add, "broadcast_sub": np.subtract, "broadcast_mul": np.multiply}
UNARY = {
    "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh,
    "negative": np.negative, "reciprocal": lambda x: 1 / x, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "square": np.square, "sign": np.sign, "abs": np.abs,
}
UNARY_GRAD = {
    "relu_grad": lambda y, dy: np.where(y > 0, dy, 0),  # OneFlow's select: an inf dy at y <= 0 gives 0
    "sigmoid_grad": lambda y, dy: dy * y * (1 - y),
    "tanh_grad": lambda y, dy: dy * (1 - y * y),
}


def _binary(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            outs[0][...] = fn(ins[0], ins[1])

        return kernel

    return factory


def trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C's ``/``, what OneFlow's kernels compute); x / 0 gives 0."""
    with np.errstate(divide="ignore"):
        q = np.floor_divide(a, b)
        inexact = np.remainder(a, b) != 0
    return q + (inexact & ((a < 0) != (b < 0)))


def _divide(ctx: KernelCtx) -> KernelFn:
    integer = not ctx.out_descs[0].dtype.is_floating

    def kernel(ins, outs):
        outs[0][...] = trunc_divide(ins[0], ins[1]) if integer else np.divide(ins[0], ins[1])

    return kernel


def _unary(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            outs[0][...] = fn(ins[0])

        return kernel

    return factory


def scalar_operand(ctx: KernelCtx) -> np.generic:
    """The op's operand in the blob's dtype (no mixed-type arithmetic). An integer wraps into it as NumPy's
    integer arithmetic does (``x - 3`` on uint8 adds 253: the same sum modulo 256); ``np.uint8(-3)`` would
    raise."""
    dtype = ctx.out_descs[0].dtype.np
    value = ctx.attrs["operand"]
    if dtype.kind in "iu":
        return np.array(int(value), np.int64).astype(dtype)[()]
    return dtype.type(value)


def _scalar(op_type: str):
    def factory(ctx: KernelCtx) -> KernelFn:
        operand = scalar_operand(ctx)
        fn = np.add if op_type == "scalar_add" else np.multiply

        def kernel(ins, outs):
            fn(ins[0], operand, out=outs[0], casting="unsafe")

        return kernel

    return factory


def _reduce_sum_like(ctx: KernelCtx) -> KernelFn:
    out_shape = ctx.out_descs[0].shape

    def kernel(ins, outs):
        outs[0][...] = sum_to_shape(ins[0], out_shape)

    return kernel


def sum_to_shape(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Undo numpy broadcasting: sum ``x`` down to ``shape``."""
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1)
    if not axes:
        return x
    return x.sum(axis=axes, dtype=np.float64 if x.dtype.kind == "f" else None).reshape(shape)  # as reduce.sum_dtype


for _name, _fn in BINARY.items():
    register_kernel(_name, "reference")(_binary(_fn))
register_kernel("broadcast_div", "reference")(_divide)
for _name, _fn in UNARY.items():
    register_kernel(_name, "reference")(_unary(_fn))
for _name, _fn in UNARY_GRAD.items():
    register_kernel(_name, "reference")(_binary(_fn))
for _name in ("scalar_add", "scalar_mul"):
    register_kernel(_name, "reference")(_scalar(_name))
register_kernel("reduce_sum_like", "reference")(_reduce_sum_like)
