"""NumPy reference kernels: comparisons (int8 out), maximum/minimum and their gradient, floor mod, where and
broadcast_to_compatible_with (ops/compare_ops.py)."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def floor_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """OneFlow's FloorMod: the remainder with y's sign (np.mod); an integer x % 0 gives 0, as NumPy."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mod(x, y)


def _maximum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x > y, x, y)  # OneFlow's ``x > y ? x : y``: a NaN x gives y


def _minimum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x < y, x, y)


BINARY = {
    "broadcast_equal": np.equal, "broadcast_not_equal": np.not_equal, "broadcast_greater": np.greater,
    "broadcast_greater_equal": np.greater_equal, "broadcast_less": np.less, "broadcast_less_equal": np.less_equal,
    "broadcast_logical_and": lambda x, y: (x != 0) & (y != 0),
    "broadcast_maximum": _maximum, "broadcast_minimum": _minimum, "broadcast_floor_mod": floor_mod,
    "elementwise_maximum": _maximum, "elementwise_minimum": _minimum,
}


def _binary(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            outs[0][...] = fn(ins[0], ins[1])

        return kernel

    return factory


def _xmum_backward(op_type: str):
    def factory(ctx: KernelCtx) -> KernelFn:
        wins = np.greater if op_type == "elementwise_maximum_backward" else np.less

        def kernel(ins, outs):
            dz, x, y = ins
            to_x = wins(x, y)
            outs[0][...] = np.where(to_x, dz, 0)
            outs[1][...] = np.where(to_x, 0, dz)

        return kernel

    return factory


@register_kernel("where", "reference")
def _where(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        outs[0][...] = np.where(ins[0] != 0, ins[1], ins[2])

    return kernel


@register_kernel("broadcast_to_compatible_with", "reference")
def _broadcast_to(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        outs[0][...] = ins[0]  # numpy broadcasting: the output's shape is the one all inputs broadcast to

    return kernel


for _name, _fn in BINARY.items():
    register_kernel(_name, "reference")(_binary(_fn))
for _name in ("elementwise_maximum_backward", "elementwise_minimum_backward"):
    register_kernel(_name, "reference")(_xmum_backward(_name))
