"""NumPy reference kernels of ops/unary_ops.py: OneFlow's float functors (math_unary_elementwise_func.h) and
their backward, in the blob's dtype. log_sigmoid and softplus use OneFlow's direct formulas."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def _reciprocal_no_nan(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(np.abs(x) <= 0, 0, 1 / x).astype(x.dtype)


def _special(name: str):
    """scipy.special's ``name``, imported at the first call: importing scipy.special takes 0.5 s, which every
    fresh process's first job call paid (the reference kernels are imported at the first kernel build)."""
    def fn(x: np.ndarray) -> np.ndarray:
        from scipy import special

        return getattr(special, name)(x)

    return fn


def _lgamma(x: np.ndarray) -> np.ndarray:
    return np.where(np.isneginf(x), np.inf, _special("gammaln")(x))  # C's lgamma(-inf) is +inf; SciPy says -inf


def _zero(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    return np.zeros_like(dy)


_2_SQRT_PI = 2 / np.sqrt(np.pi)
FORWARD = {
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan,
    "atanh": np.arctanh, "ceil": np.ceil, "cos": np.cos, "cosh": np.cosh,
    "erf": _special("erf"), "erfc": _special("erfc"),
    "expm1": np.expm1, "floor": np.floor, "lgamma": _lgamma, "log1p": np.log1p,
    "log_sigmoid": lambda x: -np.log(1 + np.exp(-x)), "reciprocal_no_nan": _reciprocal_no_nan, "rint": np.rint,
    "round": np.rint,  # nearbyint: halves to even
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "sinh": np.sinh, "softplus": lambda x: np.log(1 + np.exp(x)),
    "tan": np.tan,
}
BACKWARD = {
    "acos": lambda x, dy: -dy / np.sqrt(1 - x * x), "acosh": lambda x, dy: dy / np.sqrt(x * x - 1),
    "asin": lambda x, dy: dy / np.sqrt(1 - x * x), "asinh": lambda x, dy: dy / np.sqrt(1 + x * x),
    "atan": lambda x, dy: dy / (1 + x * x), "atanh": lambda x, dy: dy / (1 - x * x), "ceil": _zero,
    "cos": lambda x, dy: -dy * np.sin(x), "cosh": lambda x, dy: dy * np.sinh(x),
    "erf": lambda x, dy: dy * _2_SQRT_PI * np.exp(-x * x), "erfc": lambda x, dy: -dy * _2_SQRT_PI * np.exp(-x * x),
    "expm1": lambda x, dy: dy * np.exp(x), "floor": _zero, "log1p": lambda x, dy: dy / (1 + x),
    "log_sigmoid": lambda x, dy: dy / (np.exp(x) + 1),
    "reciprocal_no_nan": lambda x, dy: np.where(np.abs(x) <= 0, 0, -dy / (x * x)),
    "rint": _zero, "round": _zero, "rsqrt": lambda x, dy: dy * (-1 / (2 * np.sqrt(x * x * x))),
    "sin": lambda x, dy: dy * np.cos(x), "sinh": lambda x, dy: dy * np.cosh(x),
    "softplus": lambda x, dy: dy * np.exp(x) / (np.exp(x) + 1), "tan": lambda x, dy: dy / np.square(np.cos(x)),
}


def _forward(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            with np.errstate(all="ignore"):
                outs[0][...] = fn(ins[0])

        return kernel

    return factory


def _backward(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            with np.errstate(all="ignore"):
                outs[0][...] = fn(ins[0], ins[1])

        return kernel

    return factory


for _name, _fn in FORWARD.items():
    register_kernel(_name, "reference")(_forward(_fn))
for _name, _fn in BACKWARD.items():
    register_kernel(f"{_name}_grad", "reference")(_backward(_fn))
