"""matmul, bias_add, softmax, sparse softmax cross entropy, with gradient rules."""

from __future__ import annotations

from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.sbp import split
from ._common import require_blob, same_dtype
from .registry import ARITHMETIC, FLOATING, INDEX, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import bias_add_rule, elementwise, matmul_rule


def _infer_matmul(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    a, b = ctx.input("a"), ctx.input("b")
    same_dtype(ctx, a, b)
    if len(a.shape) < 2 or len(a.shape) != len(b.shape):
        raise ctx.fail(f"matmul needs two blobs of the same rank >= 2; got {a} and {b}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ctx.fail(f"batch dimensions differ: {list(a.shape[:-2])} vs {list(b.shape[:-2])}")
    m, k = (a.shape[-1], a.shape[-2]) if ctx.attrs["transpose_a"] else a.shape[-2:]
    k2, n = (b.shape[-1], b.shape[-2]) if ctx.attrs["transpose_b"] else b.shape[-2:]
    if k != k2:
        flags = f"transpose_a={ctx.attrs['transpose_a']}, transpose_b={ctx.attrs['transpose_b']}"
        raise ctx.fail(f"inner dimensions differ: {a} x {b} with {flags} multiplies [{m},{k}] by [{k2},{n}]")
    return {"out": [BlobDesc((*a.shape[:-2], m, n), a.dtype)]}


def _grad_matmul(ctx: Any) -> None:
    dc, a, b = ctx.dy("out"), ctx.x("a"), ctx.x("b")
    ta, tb, alpha = ctx.attrs["transpose_a"], ctx.attrs["transpose_b"], ctx.attrs["alpha"]
    if alpha != 1.0:
        dc = add_op("scalar_mul", {"x": [dc]}, {"operand": alpha})[0]
    if ctx.needs_dx("a"):
        da = matmul(b, dc, transpose_a=tb, transpose_b=True) if ta else matmul(dc, b, transpose_b=not tb)
        ctx.set_dx("a", da)
    if ctx.needs_dx("b"):
        db = matmul(dc, a, transpose_a=True, transpose_b=ta) if tb else matmul(a, dc, transpose_a=not ta)
        ctx.set_dx("b", db)


def _infer_bias_add(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    a, b = ctx.input("a"), ctx.input("b")
    same_dtype(ctx, a, b)
    axis = ctx.attrs["axis"]
    if not -len(a.shape) <= axis < len(a.shape):
        raise ctx.fail(f"axis {axis} is out of range for {a}")
    if b.shape != (a.shape[axis],):
        raise ctx.fail(f"the bias must be 1-D with {a.shape[axis]} elements (axis {axis} of {a}); got {b}")
    return {"out": [a]}


def _grad_bias_add(ctx: Any) -> None:
    from .reduce_ops import reduce_sum

    dy = ctx.dy("out")
    ctx.set_dx("a", dy)
    if ctx.needs_dx("b"):
        axis = ctx.attrs["axis"] % len(dy.shape)
        ctx.set_dx("b", reduce_sum(dy, [i for i in range(len(dy.shape)) if i != axis]))


def _infer_softmax(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [ctx.input("in")]}  # floating only: its declared dtypes


def _grad_softmax(ctx: Any) -> None:
    ctx.set_dx("in", add_op("softmax_grad", {"y": [ctx.y("out")], "dy": [ctx.dy("out")]})[0])


def _infer_sparse_xent(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    logits, label = ctx.input("prediction"), ctx.input("label")
    if len(logits.shape) < 1 or label.shape != logits.shape[:-1]:
        raise ctx.fail(f"labels {label} must have the shape of logits {logits} without its last (class) axis")
    return {"prob": [logits], "out": [BlobDesc(label.shape, logits.dtype)]}


def _grad_sparse_xent(ctx: Any) -> None:
    dx = add_op("sparse_softmax_cross_entropy_grad",
                {"prob": [ctx.y("prob")], "label": [ctx.x("label")], "dy": [ctx.dy("out")]})[0]
    ctx.set_dx("prediction", dx)


def _infer_dx_like(arg: str):
    return lambda ctx: {"dx": [ctx.input(arg)]}


for _op in (
    OpDef("matmul", ("a", "b"), ("out",), _infer_matmul,
          {"transpose_a": False, "transpose_b": False, "alpha": 1.0}, grad=_grad_matmul, sbp=matmul_rule,
          dtypes=dtypes_of(("a", "b"), FLOATING)),  # BLAS: an integer product would overflow silently anyway
    OpDef("bias_add", ("a", "b"), ("out",), _infer_bias_add, {"axis": 1}, grad=_grad_bias_add, sbp=bias_add_rule,
          dtypes=dtypes_of(("a", "b"), ARITHMETIC)),
    OpDef("softmax", ("in",), ("out",), _infer_softmax, grad=_grad_softmax, dtypes={"in": FLOATING},
          sbp=elementwise("in", keep_last=False)),
    OpDef("softmax_grad", ("y", "dy"), ("dx",), _infer_dx_like("y"), dtypes=dtypes_of(("y", "dy"), FLOATING),
          sbp=elementwise("y", keep_last=False)),
    OpDef("sparse_softmax_cross_entropy", ("prediction", "label"), ("prob", "out"), _infer_sparse_xent,
          grad=_grad_sparse_xent, dtypes={"prediction": FLOATING, "label": INDEX},
          sbp=elementwise("prediction", keep_last=False)),
    OpDef("sparse_softmax_cross_entropy_grad", ("prob", "label", "dy"), ("dx",), _infer_dx_like("prob"),
          dtypes=dtypes_of(("prob", "label", "dy"), FLOATING, label=INDEX),
          sbp=elementwise("prob", keep_last=False)),
):
    register_op(_op)


def matmul(a: LazyBlob, b: LazyBlob, transpose_a: bool = False, transpose_b: bool = False, alpha: float = 1.0,
           name: str | None = None) -> LazyBlob:
    """``alpha * op(a) @ op(b)``; rank > 2 multiplies matrices batch by batch (OneFlow's batch_matmul). A 2-D
    ``b`` with a higher-rank ``a`` multiplies every row of ``a`` (OneFlow's broadcast_matmul)."""
    from .array_ops import reshape

    require_blob(a, "matmul's a")
    require_blob(b, "matmul's b")
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b), "alpha": float(alpha)}
    if len(a.shape) > 2 and len(b.shape) == 2 and not transpose_a:
        rows = reshape(a, (-1, a.shape[-1]))
        out = add_op("matmul", {"a": [rows], "b": [b]}, attrs, name)[0]
        return reshape(out, (*a.shape[:-1], out.shape[-1]))
    return add_op("matmul", {"a": [a], "b": [b]}, attrs, name)[0]


def bias_add(value: LazyBlob, bias: LazyBlob, data_format: str | None = None, name: str | None = None) -> LazyBlob:
    """Add a 1-D bias along the channel axis: axis 1 for ``None`` or ``"NC..."`` (NCHW, NCW), the last axis for
    ``"N...C"`` (NHWC, NWC), as in OneFlow."""
    require_blob(value, "bias_add's value")
    require_blob(bias, "bias_add's bias")
    if data_format is None or data_format.startswith("NC") or data_format == "channels_first":
        axis = 1
    elif (data_format.startswith("N") and data_format.endswith("C")) or data_format == "channels_last":
        axis = len(value.shape) - 1
    else:
        raise ValueError(f"bias_add's data_format must be None, 'NC...' (e.g. 'NCHW') or 'N...C' (e.g. 'NHWC'); "
                         f"got {data_format!r}")
    return add_op("bias_add", {"a": [value], "b": [bias]}, {"axis": axis}, name)[0]


def _mirrored_now() -> bool:
    """In the mirrored view each device computes its own examples' loss over all classes (a mirrored op's inputs
    lie as they are, whatever they are tagged): the plain op, never the model-parallel one."""
    from ..frontend import scope
    from ..frontend.builder import current_builder

    return scope.current_view(current_builder().default_view) == "mirrored"


def softmax(logits: LazyBlob, axis: int | None = None, name: str | None = None) -> LazyBlob:
    """Softmax along ``axis`` (the last by default); other axes go through a transpose, as in OneFlow."""
    from .array_ops import transpose

    require_blob(logits, "softmax's logits")
    rank = len(logits.shape)
    axis = rank - 1 if axis is None else axis % rank
    if axis == rank - 1:
        return add_op("softmax", {"in": [logits]}, name=name)[0]
    perm = [i for i in range(rank) if i != axis] + [axis]
    out = add_op("softmax", {"in": [transpose(logits, perm)]}, name=name)[0]
    return transpose(out, [perm.index(i) for i in range(rank)])


def sparse_softmax_cross_entropy_with_logits(labels: LazyBlob, logits: LazyBlob, name: str | None = None) -> LazyBlob:
    """Per-example cross entropy of ``softmax(logits)`` against integer ``labels`` (shape of logits without its
    last axis; a trailing axis of 1 is squeezed away, as in OneFlow). The op's ``prob`` output is the softmax.
    Logits tagged split on their class axis (``logits.with_distribute(flow.distribute.split(last))``) take
    OneFlow's model-parallel ``sparse_softmax_cross_entropy_ms`` (ops/model_parallel.py)."""
    require_blob(labels, "labels")
    require_blob(logits, "logits")
    if len(labels.shape) == len(logits.shape) and labels.shape[-1] == 1:
        from .array_ops import reshape

        labels = reshape(labels, labels.shape[:-1] or (1,))
    if len(logits.shape) >= 2 and logits.distribute == split(len(logits.shape) - 1) and not _mirrored_now():
        _prob, out = add_op("sparse_softmax_cross_entropy_ms", {"prediction": [logits], "label": [labels]},
                            {"depth": logits.shape[-1]}, name=name)
        return out
    _prob, out = add_op("sparse_softmax_cross_entropy", {"prediction": [logits], "label": [labels]}, name=name)
    return out
