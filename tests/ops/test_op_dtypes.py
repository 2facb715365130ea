"""Every op type x every flowlab dtype: either inference rejects the dtype (naming the op, the argument, the
dtype given and the dtypes accepted), or both kernel modes run it and match the op computed in float64 (issue
9, defect 8). float16 computes in float32; integers are exact (truncating division, wrapping as NumPy)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from flowlab.errors import OpInferError
from flowlab.ir import BlobDesc, OpConf
from flowlab.ir import dtype as fd
from flowlab.kernels import make_kernel
from flowlab.ops.registry import InferCtx, get_op_def, registered_op_types

from .op_samples import IN_PLACE, INDEX_ARGS, data_args, sample

USER_OPS = [t for t in registered_op_types() if not get_op_def(t).system]
TOLERANCE = {fd.float16: 3e-3, fd.float32: 2e-5, fd.float64: 1e-10}


def infer_and_run(op_type: str, inputs: dict, attrs: dict, dtype_of: dict, impl: str | None):
    """Infer with the flowlab dtypes ``dtype_of[arg]`` (char is int8 to NumPy) and, with ``impl``, run the
    kernel on copies of ``inputs``: the outputs, then the inputs the op updates in place."""
    op_def = get_op_def(op_type)
    full = {**op_def.attrs, **attrs}
    in_descs = {arg: tuple(BlobDesc(a.shape, dtype_of.get(arg) or fd.from_numpy(a.dtype)) for a in arrays)
                for arg, arrays in inputs.items()}
    out_descs = op_def.infer(InferCtx("t", op_type, in_descs, full))
    if impl is None:
        return out_descs
    op = OpConf("t", op_type, {arg: tuple(f"x/{arg}_{i}" for i in range(len(v))) for arg, v in inputs.items()},
                {arg: tuple(f"t/{arg}_{i}" for i in range(len(d))) for arg, d in out_descs.items()}, full)
    copies = {arg: [a.copy() for a in arrays] for arg, arrays in inputs.items()}
    flat_out = [d for arg in op_def.outputs for d in out_descs.get(arg, [])]
    outs = [np.full(d.shape, 7, d.dtype.np) for d in flat_out]
    kernel = make_kernel(op, [d for arg in op_def.inputs for d in in_descs.get(arg, ())], flat_out, impl)
    kernel([a for arg in op_def.inputs for a in copies.get(arg, [])], outs)
    return outs + [a for arg in IN_PLACE.get(op_type, ()) for a in copies[arg]]


def as_dtype_of(expected: np.ndarray, like: np.ndarray) -> np.ndarray:
    """The float64 result in ``like``'s dtype: integers truncate, then wrap as NumPy's integer arithmetic."""
    if like.dtype.kind in "iu":
        return np.trunc(expected).astype(np.int64).astype(like.dtype)
    return expected.astype(like.dtype)


def test_every_op_declares_the_dtypes_of_every_input():
    for op_type in USER_OPS:
        op_def = get_op_def(op_type)
        assert set(op_def.dtypes) == set(op_def.inputs), op_type


# learning_rate_schedule and one_hot have no data argument (only a step / indices, checked with the index
# arguments below)
# (CategoricalOrdinalEncode: keys, table and size all of one index dtype; tests/ops/test_encode_ops.py)
DATA_OPS = [t for t in USER_OPS if t not in ("learning_rate_schedule", "one_hot", "CategoricalOrdinalEncode")]


@pytest.mark.parametrize("dtype", fd.ALL, ids=[d.name for d in fd.ALL])
@pytest.mark.parametrize("op_type", DATA_OPS)
def test_each_dtype_is_rejected_at_inference_or_computed_right(op_type, dtype):
    inputs, attrs = sample(op_type, dtype.np)
    if op_type == "constant":
        attrs["dtype"] = dtype
    args = data_args(op_type, inputs, dtype.np)
    assert args or not inputs, f"the sample of {op_type} has no argument in {dtype.name}"
    check_dtype(op_type, inputs, attrs, args, dtype)


@pytest.mark.parametrize("dtype", fd.ALL, ids=[d.name for d in fd.ALL])
@pytest.mark.parametrize("op_type", sorted(INDEX_ARGS))
def test_each_index_dtype_is_rejected_at_inference_or_computed_right(op_type, dtype):
    """Labels, indices, segment ids and steps: integers of any width, never floats or char."""
    inputs, attrs = sample(op_type, np.float32)
    arg = INDEX_ARGS[op_type]
    inputs[arg] = [x.astype(dtype.np) for x in inputs[arg]]
    check_dtype(op_type, inputs, attrs, [arg], dtype, wide_type=np.int64)


def check_dtype(op_type: str, inputs: dict, attrs: dict, args: list[str], dtype: fd.DType,
                wide_type: type = np.float64) -> None:
    """Refused by inference with the message, or computed by both modes as with ``args`` in ``wide_type``."""
    op_def = get_op_def(op_type)
    dtype_of = dict.fromkeys(args, dtype)
    refused = [a for a in args if dtype not in op_def.dtypes[a]]
    if refused:
        accepted = ", ".join(d.name for d in op_def.dtypes[refused[0]])
        with pytest.raises(OpInferError, match=re.escape(f"input {refused[0]!r} has dtype {dtype.name}; "
                                                         f"{op_type} accepts {accepted}")):
            infer_and_run(op_type, inputs, attrs, dtype_of, None)
        return
    wide = {a: [x.astype(wide_type) if a in args else x for x in xs] for a, xs in inputs.items()}
    wide_attrs = {**attrs, "dtype": fd.float64} if op_type == "constant" else attrs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = infer_and_run(op_type, wide, wide_attrs, {}, "reference")
        for impl in ("reference", "numba"):
            got = infer_and_run(op_type, inputs, attrs, dtype_of, impl)
            assert len(got) == len(want)
            for i, (g, w) in enumerate(zip(got, want)):
                expected_dtype = np.dtype(np.float64 if op_type == "cast" else dtype.np) if w.dtype == np.float64 \
                    else w.dtype
                assert g.dtype == expected_dtype, f"{impl} output {i}"
                tol = TOLERANCE.get(fd.from_numpy(g.dtype), 0)
                np.testing.assert_allclose(g, as_dtype_of(w, g), rtol=tol, atol=tol, err_msg=f"{impl} output {i}")
