"""NumPy reference kernels of ops/binary_ops.py: OneFlow's PowFunctor, Atan2Functor, FloordivFunctor, XdivyFunctor
and XlogyFunctor with their x/y gradients (math_binary_elementwise_func.h), scalar_pow and the clips
(clip_by_value_kernel.h: max then min as ``a > b ? a : b``; the gradient 0 outside [min, max])."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def _xdivy(x, y):
    return np.where(x == 0, 0, x / y)


def _pow_dy(x, y, dz):
    return np.where(x > 0, dz * np.log(np.where(x > 0, x, 1)) * np.power(x, y), 0)


FORWARD = {"pow": np.power, "atan2": np.arctan2, "floordiv": lambda x, y: np.floor(x / y), "xdivy": _xdivy,
           "xlogy": lambda x, y: np.where(x == 0, 0, x * np.log(y))}
X_GRAD = {"pow": lambda x, y, dz: dz * y * np.power(x, y - 1), "atan2": lambda x, y, dz: dz * (y / (x * x + y * y)),
          "floordiv": lambda x, y, dz: np.zeros_like(dz),
          "xdivy": lambda x, y, dz: np.where((x == 0) | (dz == 0), 0, dz / y),
          "xlogy": lambda x, y, dz: np.where((x == 0) | (dz == 0), 0, dz * np.log(y))}
Y_GRAD = {"pow": _pow_dy, "atan2": lambda x, y, dz: dz * -x / (y * y + x * x),
          "floordiv": lambda x, y, dz: np.zeros_like(dz),
          "xdivy": lambda x, y, dz: dz * _xdivy(-x, y * y), "xlogy": lambda x, y, dz: dz * _xdivy(x, y)}


def _apply(fn, n_in: int):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            with np.errstate(all="ignore"):
                outs[0][...] = fn(*ins[:n_in])

        return kernel

    return factory


def clip_bounds(ctx: KernelCtx) -> tuple[object, object]:
    """(min, max) in the blob's dtype, None where the op has no such bound: the floating attr for a floating blob,
    the integral one otherwise (as OneFlow's kernel picks)."""
    dtype = ctx.in_descs[-1].dtype
    kind = "floating" if dtype.is_floating else "integral"
    return tuple(dtype.np.type(ctx.attrs[f"{kind}_{b}"]) if f"{kind}_{b}" in ctx.attrs else None
                 for b in ("min", "max"))


def clip(x: np.ndarray, lo, hi) -> np.ndarray:
    if lo is not None:
        x = np.where(x > lo, x, lo)  # DeviceMax: a NaN gives the bound, as OneFlow's ``a > b ? a : b``
    if hi is not None:
        x = np.where(x < hi, x, hi)
    return x


def _clip(ctx: KernelCtx) -> KernelFn:
    lo, hi = clip_bounds(ctx)

    def kernel(ins, outs):
        outs[0][...] = clip(ins[0], lo, hi)

    return kernel


def _clip_grad(ctx: KernelCtx) -> KernelFn:
    lo, hi = clip_bounds(ctx)

    def kernel(ins, outs):
        dy, x = ins
        out = (x < lo) if lo is not None else np.zeros(x.shape, bool)
        if hi is not None:
            out |= x > hi
        outs[0][...] = np.where(out, 0, dy)

    return kernel


@register_kernel("scalar_pow", "reference")
def _scalar_pow(ctx: KernelCtx) -> KernelFn:
    e = ctx.in_descs[0].dtype.np.type(ctx.attrs["exponent"])

    def kernel(ins, outs):
        with np.errstate(all="ignore"):
            outs[0][...] = np.power(ins[0], e)

    return kernel


@register_kernel("scalar_pow_grad", "reference")
def _scalar_pow_grad(ctx: KernelCtx) -> KernelFn:
    e = ctx.in_descs[0].dtype.np.type(ctx.attrs["exponent"])

    def kernel(ins, outs):
        with np.errstate(all="ignore"):
            outs[0][...] = e * np.power(ins[0], e - 1) * ins[1]

    return kernel


for _name in FORWARD:
    register_kernel(_name, "reference")(_apply(FORWARD[_name], 2))
    register_kernel(f"{_name}_x_grad", "reference")(_apply(X_GRAD[_name], 3))
    register_kernel(f"{_name}_y_grad", "reference")(_apply(Y_GRAD[_name], 3))
for _name in ("clip_by_scalar", "clip_by_scalar_min", "clip_by_scalar_max"):
    register_kernel(_name, "reference")(_clip)
    register_kernel(f"{_name}_grad", "reference")(_clip_grad)
