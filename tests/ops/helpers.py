"""Run one op's kernel directly (no session), building its OpConf and blob descs through the op registry."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.ir import BlobDesc, OpConf
from flowlab.ir.dtype import from_numpy
from flowlab.kernels import make_kernel
from flowlab.ops.registry import InferCtx, get_op_def


def op_kernel(op_type: str, inputs: dict[str, list[np.ndarray]], attrs: dict[str, Any], impl: str
              ) -> tuple[Any, list[np.ndarray], list[np.ndarray]]:
    """The kernel ``make_kernel`` builds for one op on ``inputs``, its flat input arrays and its output arrays (filled
    with 7: garbage the kernel must overwrite), not yet run."""
    op_def = get_op_def(op_type)
    full = {**op_def.attrs, **attrs}
    in_descs = {arg: tuple(BlobDesc(a.shape, from_numpy(a.dtype)) for a in arrays) for arg, arrays in inputs.items()}
    out_descs = op_def.infer(InferCtx("t", op_type, in_descs, full))
    op = OpConf("t", op_type, {arg: tuple(f"x/{arg}_{i}" for i in range(len(v))) for arg, v in inputs.items()},
                {arg: tuple(f"t/{arg}_{i}" for i in range(len(d))) for arg, d in out_descs.items()}, full)
    flat_in = [np.ascontiguousarray(a) for arg in op_def.inputs for a in inputs.get(arg, [])]
    flat_in_descs = [d for arg in op_def.inputs for d in in_descs.get(arg, ())]
    flat_out_descs = [d for arg in op_def.outputs for d in out_descs.get(arg, [])]
    outs = [np.full(d.shape, 7, d.dtype.np) for d in flat_out_descs]
    return make_kernel(op, flat_in_descs, flat_out_descs, impl), flat_in, outs


def run_op(op_type: str, inputs: dict[str, list[np.ndarray]], attrs: dict[str, Any], impl: str) -> list[np.ndarray]:
    kernel, flat_in, outs = op_kernel(op_type, inputs, attrs, impl)
    kernel(flat_in, outs)
    return outs
