"""Run one op's CUDA kernel on host arrays (copied to the device and back), next to the NumPy reference kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.ir import BlobDesc, OpConf
from flowlab.ir.dtype import from_numpy
from flowlab.kernels import make_kernel
from flowlab.ops.registry import InferCtx, get_op_def

IN_PLACE = {"sgd_update": ("model",), "momentum_update": ("model", "momentum"),
            "adam_update": ("model", "m", "v"), "rmsprop_update": ("model", "mean_square"), "assign": ("ref",),
            "normalization": ("moving_mean", "moving_variance"), "indexed_slices_adam_update": ("model", "m", "v"),
            "lamb_update": ("model", "m", "v", "beta1_t", "beta2_t")}


def _op(op_type: str, inputs: dict[str, list[np.ndarray]], attrs: dict[str, Any]):
    op_def = get_op_def(op_type)
    full = {**op_def.attrs, **attrs}
    in_descs = {arg: tuple(BlobDesc(a.shape, from_numpy(a.dtype)) for a in arrays) for arg, arrays in inputs.items()}
    out_descs = op_def.infer(InferCtx("t", op_type, in_descs, full))
    op = OpConf("t", op_type, {arg: tuple(f"x/{arg}_{i}" for i in range(len(v))) for arg, v in inputs.items()},
                {arg: tuple(f"t/{arg}_{i}" for i in range(len(d))) for arg, d in out_descs.items()}, full)
    flat_in_descs = [d for arg in op_def.inputs for d in in_descs.get(arg, ())]
    flat_out_descs = [d for arg in op_def.outputs for d in out_descs.get(arg, [])]
    return op_def, op, flat_in_descs, flat_out_descs


def run(op_type: str, inputs: dict[str, list[np.ndarray]], attrs: dict[str, Any], device: str,
        impl: str | None = None) -> list[np.ndarray]:
    """The op's outputs, then the inputs it updates in place, on copies of ``inputs``; device "cpu" runs the
    reference kernel (unless ``impl``), "gpu" the CUDA kernel with the current launch_config."""
    from numba import cuda

    op_def, op, in_descs, out_descs = _op(op_type, inputs, attrs)
    copies = {arg: [np.ascontiguousarray(a).copy() for a in arrays] for arg, arrays in inputs.items()}
    flat_in = [a for arg in op_def.inputs for a in copies.get(arg, [])]
    outs = [np.full(d.shape, 7, d.dtype.np) for d in out_descs]  # garbage: kernels must overwrite
    if device == "cpu":
        make_kernel(op, in_descs, out_descs, impl or "reference")(flat_in, outs)
    else:
        kernel = make_kernel(op, in_descs, out_descs, device="gpu")
        stream = cuda.stream()
        d_in = [cuda.to_device(a, stream=stream) for a in flat_in]
        d_out = [cuda.to_device(a, stream=stream) for a in outs]
        kernel(d_in, d_out, stream)
        for host, d in zip((*flat_in, *outs), (*d_in, *d_out)):
            d.copy_to_host(host, stream=stream)
        stream.synchronize()
    return outs + [a for arg in IN_PLACE.get(op_type, ()) for a in copies[arg]]
