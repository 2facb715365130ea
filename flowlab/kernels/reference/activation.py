"""NumPy reference kernels of ops/activation_ops.py: elu, hardsigmoid, hardswish, hardtanh and their gradients, written
as OneFlow's CPU kernels (``oneflow/user/kernels/{elu,hardsigmoid,hardswish,hardtanh}_kernel.cpp``) compute them;
the exact (erf) gelu and leaky_relu with theirs."""

from __future__ import annotations

import math

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def elu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def elu_grad(x: np.ndarray, dy: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, dy, dy * alpha * np.exp(np.minimum(x, 0)))


def hardsigmoid(x: np.ndarray) -> np.ndarray:
    return np.where(x <= -3, 0, np.where(x >= 3, 1, x / 6 + 0.5))


def hardsigmoid_grad(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    return np.where((x > -3) & (x < 3), dy / 6, 0)


def hardswish(x: np.ndarray) -> np.ndarray:
    return np.where(x <= -3, 0, np.where(x >= 3, x, x * (x + 3) / 6))


def hardswish_grad(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    return np.where(x <= -3, 0, np.where(x >= 3, dy, (x / 3 + 0.5) * dy))


def hardtanh(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    # OneFlow's branches: x > max -> max, x < min -> min, else x (so NaN passes through)
    return np.where(x > hi, hi, np.where(x < lo, lo, x))


def hardtanh_grad(y: np.ndarray, dy: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.where((y != lo) & (y != hi), dy, 0)


def _factory(fn, attrs: tuple[str, ...]):
    def factory(ctx: KernelCtx) -> KernelFn:
        dt = ctx.out_descs[0].dtype.np
        # the attrs in the blob's dtype, as OneFlow's kernels cast them (a float32 y equals the float32 bound)
        params = [dt.type(ctx.attrs[a]) for a in attrs]

        def kernel(ins, outs):
            outs[0][...] = fn(*ins, *params)

        return kernel

    return factory


for _name, _fn, _attrs in (
    ("elu", elu, ("alpha",)), ("elu_grad", elu_grad, ("alpha",)),
    ("hardsigmoid", hardsigmoid, ()), ("hardsigmoid_grad", hardsigmoid_grad, ()),
    ("hardswish", hardswish, ()), ("hardswish_grad", hardswish_grad, ()),
    ("hardtanh", hardtanh, ("min_val", "max_val")), ("hardtanh_grad", hardtanh_grad, ("min_val", "max_val")),
):
    register_kernel(_name, "reference")(_factory(_fn, _attrs))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x: np.ndarray) -> np.ndarray:
    # In float64: in the negative tail 1 + erf(x / sqrt 2) cancels, so x / sqrt 2 rounded to float32 first was
    # ~40 ulp off at x = -6 (the differential fuzzer found it; the Numba kernel computes in float64 too).
    x64 = x.astype(np.float64, copy=False)
    return 0.5 * x64 * (1 + _erf(x64 / math.sqrt(2)))


def gelu_grad(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64, copy=False)
    cdf = 0.5 * (1 + _erf(x / math.sqrt(2)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return dy * (cdf + x * pdf)


def _fn(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        alpha = ctx.attrs.get("alpha")

        def kernel(ins, outs):
            outs[0][...] = fn(*ins, alpha) if alpha is not None else fn(*ins)

        return kernel

    return factory


register_kernel("gelu", "reference")(_fn(gelu))
register_kernel("gelu_grad", "reference")(_fn(gelu_grad))
register_kernel("leaky_relu", "reference")(_fn(lambda x, a: np.where(x > 0, x, a * x)))
register_kernel("leaky_relu_grad", "reference")(_fn(lambda x, dy, a: np.where(x > 0, dy, a * dy)))
