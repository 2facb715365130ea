"""A matmul op's Numba kernel, made for given shapes."""

from __future__ import annotations

import numpy as np

from flowlab.ir import BlobDesc, OpConf
from flowlab.ir.dtype import from_numpy
from flowlab.kernels import make_kernel


def matmul_kernel(a: np.ndarray, b: np.ndarray, ta: bool, tb: bool):
    m, n = (a.shape[1] if ta else a.shape[0]), (b.shape[0] if tb else b.shape[1])
    attrs = {"transpose_a": ta, "transpose_b": tb, "alpha": 1.0}
    op = OpConf("t", "matmul", {"a": ("x/a",), "b": ("x/b",)}, {"out": ("t/out",)}, attrs)
    descs = [BlobDesc(a.shape, from_numpy(a.dtype)), BlobDesc(b.shape, from_numpy(b.dtype))]
    return make_kernel(op, descs, [BlobDesc((m, n), from_numpy(a.dtype))], "numba"), np.empty((m, n), a.dtype)
