"""Numba CPU kernels: comparisons (int8 out), maximum/minimum and their gradient, floor mod, where and
broadcast_to_compatible_with (see kernels/reference/compare.py). One loop per shape case, the op picked by a
small integer: same-shape operands run flat, broadcasting ones over numpy broadcast views built once."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit

KINDS = ("broadcast_equal", "broadcast_not_equal", "broadcast_greater", "broadcast_greater_equal",
         "broadcast_less", "broadcast_less_equal", "broadcast_logical_and", "broadcast_maximum",
         "broadcast_minimum", "broadcast_floor_mod", "elementwise_maximum", "elementwise_minimum")

INT_MOD = len(KINDS)  # broadcast_floor_mod on integers


@njit
def _apply(kind, x, y):
    if kind == 0:
        return 1 if x == y else 0
    if kind == 1:
        return 1 if x != y else 0
    if kind == 2:
        return 1 if x > y else 0
    if kind == 3:
        return 1 if x >= y else 0
    if kind == 4:
        return 1 if x < y else 0
    if kind == 5:
        return 1 if x <= y else 0
    if kind == 6:
        return 1 if x != 0 and y != 0 else 0
    if kind == 7 or kind == 10:
        return x if x > y else y  # OneFlow's ``x > y ? x : y``
    if kind == 8 or kind == 11:
        return x if x < y else y
    if kind == INT_MOD and y == 0:
        return x - x  # an integer x % 0 gives 0, as NumPy
    return x % y  # the remainder with y's sign (OneFlow's FloorMod, NumPy's mod)


@njit
def _flat(kind, a, b, o):
    a, b, o = a.ravel(), b.ravel(), o.ravel()
    for i in range(o.size):
        o[i] = _apply(kind, a[i], b[i])


@njit
def _nd(kind, a, b, o):
    for idx in np.ndindex(o.shape):
        o[idx] = _apply(kind, a[idx], b[idx])


def _binary(k: int):
    def factory(ctx: KernelCtx) -> KernelFn:
        out_shape = ctx.out_descs[0].shape
        kind = INT_MOD if KINDS[k] == "broadcast_floor_mod" and not ctx.out_descs[0].dtype.is_floating else k
        if all(d.shape == out_shape for d in ctx.in_descs):
            return lambda ins, outs: _flat(kind, ins[0], ins[1], outs[0])
        views: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

        def broadcast(ins, outs):
            key = (id(ins[0]), id(ins[1]))
            if key not in views:  # registers are fixed arrays: build the broadcast views once
                views[key] = (np.broadcast_to(ins[0], out_shape), np.broadcast_to(ins[1], out_shape))
            _nd(kind, *views[key], outs[0])

        return broadcast

    return factory


@njit
def _xmum_backward(maximum, dz, x, y, dx, dy):
    dz, x, y, dx, dy = dz.ravel(), x.ravel(), y.ravel(), dx.ravel(), dy.ravel()
    for i in range(dz.size):
        to_x = x[i] > y[i] if maximum else x[i] < y[i]
        dx[i] = dz[i] if to_x else 0
        dy[i] = 0 if to_x else dz[i]


@njit
def _where(c, x, y, o):
    c, x, y, o = c.ravel(), x.ravel(), y.ravel(), o.ravel()
    for i in range(o.size):
        o[i] = x[i] if c[i] != 0 else y[i]


@register_kernel("where", "numba")
def _where_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _where(ins[0], ins[1], ins[2], outs[0])


@register_kernel("broadcast_to_compatible_with", "numba")
def _broadcast_to(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        outs[0][...] = ins[0]  # a copy with numpy broadcasting: NumPy's strided copy is the fast path

    return kernel


for _kind, _name in enumerate(KINDS):
    register_kernel(_name, "numba")(_binary(_kind))


def _xmum_backward_factory(maximum: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        return lambda ins, outs: _xmum_backward(maximum, ins[0], ins[1], ins[2], outs[0], outs[1])

    return factory


register_kernel("elementwise_maximum_backward", "numba")(_xmum_backward_factory(True))
register_kernel("elementwise_minimum_backward", "numba")(_xmum_backward_factory(False))
