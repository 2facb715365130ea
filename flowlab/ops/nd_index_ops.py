"""N-d indexing ops: ``flow.gather_nd``, ``flow.scatter_nd``, ``flow.tensor_scatter_nd_update``,
``flow.tensor_scatter_nd_add`` (and scatter_nd_like, gather_nd's gradient), ``flow.dim_gather`` (and
dim_scatter_add_like, its gradient).

Declared as ``oneflow/user/ops/nd_index_slice_ops.cpp`` and ``dim_gather_op.cpp`` declare them: ``indices``'s last
axis holds K coordinates into the first K axes of ``params``; every other axis of ``indices`` is a batch axis; the
rest of ``params`` (its slice) is copied whole. Gradients as OneFlow's: gather_nd <-> scatter_nd(_like),
tensor_scatter_nd_update's params gradient is dy with the updated positions zeroed. SBP: OneFlow's signatures that
are exact. Left out: scatter_nd and tensor_scatter_nd_* with the indices split and the output B, which OneFlow
declares but which would leave each device with only its own indices' updates (docs/ops.md).
"""

from __future__ import annotations

from typing import Any

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from ..ir.sbp import BROADCAST, PARTIAL_SUM, split
from ._common import require_blob
from .registry import ANY, ARITHMETIC, INDEX, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature


def _where() -> str:
    loc = user_location()
    return f"{loc}: " if loc else ""


def check_scatter_shapes(ctx: InferCtx, params: tuple[int, ...], indices: BlobDesc, updates: BlobDesc,
                         params_arg: str) -> None:
    """CheckScatterNdShape: updates = the indices' batch axes followed by the slice of params past its K axes."""
    if not indices.shape:
        raise ctx.fail(f"indices must have rank >= 1 (its last axis holds the coordinates); got {indices}")
    k = indices.shape[-1]
    if k > len(params):
        raise ctx.fail(f"indices {indices} hold {k} coordinates, more than {params_arg}'s {len(params)} axes "
                       f"{list(params)}")
    want = indices.shape[:-1] + tuple(params[k:])
    if updates.shape != want:
        raise ctx.fail(f"updates {updates} must have shape {list(want)}: the indices' batch axes "
                       f"{list(indices.shape[:-1])} followed by {params_arg}'s slice {list(params[k:])}")


def _infer_gather_nd(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    params, indices = ctx.input("params"), ctx.input("indices")
    if not indices.shape:
        raise ctx.fail(f"indices must have rank >= 1 (its last axis holds the coordinates); got {indices}")
    k = indices.shape[-1]
    if k > len(params.shape):
        raise ctx.fail(f"indices {indices} hold {k} coordinates, more than the {len(params.shape)} axes of "
                       f"params {params}")
    return {"out": [BlobDesc(indices.shape[:-1] + params.shape[k:], params.dtype)]}


def _infer_scatter_nd(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    shape = tuple(ctx.attrs["shape"])
    if not shape or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape):
        raise ctx.fail(f"shape must be a non-empty list of positive ints; got {ctx.attrs['shape']!r}")
    updates = ctx.input("updates")
    check_scatter_shapes(ctx, shape, ctx.input("indices"), updates, "shape")
    return {"out": [BlobDesc(shape, updates.dtype)]}


def _infer_scatter_nd_like(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    like, updates = ctx.input("like"), ctx.input("updates")
    check_scatter_shapes(ctx, like.shape, ctx.input("indices"), updates, "like")
    return {"out": [BlobDesc(like.shape, updates.dtype)]}


def _infer_tensor_scatter(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    params, updates = ctx.input("params"), ctx.input("updates")
    check_scatter_shapes(ctx, params.shape, ctx.input("indices"), updates, "params")
    if updates.dtype != params.dtype:
        raise ctx.fail(f"updates ({updates.dtype.name}) and params ({params.dtype.name}) must have the same dtype")
    return {"out": [params]}


def _gather_nd_sbp(ctx: SbpCtx) -> list[Signature]:
    nd, k = ctx.ndim("indices"), ctx.shape("indices")[-1]
    sigs = [ctx.make({"params": BROADCAST, "indices": split(i), "out": split(i)}) for i in range(nd - 1)]
    sigs += [ctx.make({"params": split(a), "indices": BROADCAST, "out": split(a - k + nd - 1)})
             for a in range(k, ctx.ndim("params"))]
    sigs.append(ctx.make({"params": PARTIAL_SUM, "indices": BROADCAST, "out": PARTIAL_SUM}))
    return sigs


def _scatter_sbp(target: str | None, base: str | None) -> Any:
    """scatter_nd (no target), scatter_nd_like (target ``like``, header only), tensor_scatter_nd_* (``params``,
    read): slice axes split all alike; P updates (and P params) give P; indices split with ``base`` absent or a
    ``like`` broadcast give P (each device adds its own indices' updates into zeros)."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        nd, k = ctx.ndim("indices"), ctx.shape("indices")[-1]
        out_nd = ctx.ndim(target) if target else len(ctx.attrs["shape"])
        sigs = []
        if base is None:
            extra = {target: BROADCAST} if target else {}
            sigs += [ctx.make({"indices": split(i), "updates": split(i), "out": PARTIAL_SUM, **extra})
                     for i in range(nd - 1)]
        for a in range(k, out_nd):
            extra = {target: split(a)} if target else {}
            sigs.append(ctx.make({"indices": BROADCAST, "updates": split(a - k + nd - 1), "out": split(a), **extra}))
        extra = {target: PARTIAL_SUM} if target else {}
        sigs.append(ctx.make({"indices": BROADCAST, "updates": PARTIAL_SUM, "out": PARTIAL_SUM, **extra}))
        return sigs

    return rule


def _grad_gather_nd(ctx: Any) -> None:
    dx = add_op("scatter_nd_like", {"like": [ctx.x("params")], "indices": [ctx.x("indices")],
                                    "updates": [ctx.dy("out")]})[0]
    ctx.set_dx("params", dx)


def _grad_scatter_nd(ctx: Any) -> None:
    ctx.set_dx("updates", add_op("gather_nd", {"params": [ctx.dy("out")], "indices": [ctx.x("indices")]})[0])


def _grad_tensor_scatter(ctx: Any) -> None:
    dy, indices = ctx.dy("out"), ctx.x("indices")
    ctx.set_dx("updates", add_op("gather_nd", {"params": [dy], "indices": [indices]})[0])
    if ctx.op.op_type == "tensor_scatter_nd_add":
        ctx.set_dx("params", dy)
        return
    zeros = add_op("zeros_like", {"like": [ctx.x("updates")]})[0]  # the overwritten positions get no gradient
    ctx.set_dx("params", add_op("tensor_scatter_nd_update", {"params": [dy], "updates": [zeros],
                                                             "indices": [indices]})[0])


register_op(OpDef("gather_nd", ("params", "indices"), ("out",), _infer_gather_nd, grad=_grad_gather_nd,
                  dtypes={"params": ANY, "indices": INDEX}, sbp=_gather_nd_sbp))
register_op(OpDef("scatter_nd", ("indices", "updates"), ("out",), _infer_scatter_nd, {"shape": REQUIRED},
                  grad=_grad_scatter_nd, dtypes={"indices": INDEX, "updates": ARITHMETIC},
                  sbp=_scatter_sbp(None, None)))
register_op(OpDef("scatter_nd_like", ("like", "indices", "updates"), ("out",), _infer_scatter_nd_like,
                  dtypes={"like": ANY, "indices": INDEX, "updates": ARITHMETIC}, sbp=_scatter_sbp("like", None)))
for _t in ("tensor_scatter_nd_update", "tensor_scatter_nd_add"):
    register_op(OpDef(_t, ("params", "updates", "indices"), ("out",), _infer_tensor_scatter, grad=_grad_tensor_scatter,
                      dtypes={"params": ARITHMETIC, "updates": ARITHMETIC, "indices": INDEX},
                      sbp=_scatter_sbp("params", "params")))


def gather_nd(params: LazyBlob, indices: LazyBlob, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.gather_nd``: ``out[b...] = params[indices[b..., 0], ..., indices[b..., K-1], ...]``."""
    require_blob(params, "gather_nd's params")
    require_blob(indices, "gather_nd's indices")
    return add_op("gather_nd", {"params": [params], "indices": [indices]}, name=name)[0]


def scatter_nd(indices: LazyBlob, updates: LazyBlob, shape: Any, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.scatter_nd``: zeros of ``shape`` with each update added at its index (duplicates sum)."""
    require_blob(indices, "scatter_nd's indices")
    require_blob(updates, "scatter_nd's updates")
    try:
        shape = tuple(shape)
    except TypeError:
        raise OpInferError(f"{_where()}scatter_nd: shape must be a list of ints; got {shape!r}") from None
    return add_op("scatter_nd", {"indices": [indices], "updates": [updates]}, {"shape": shape}, name)[0]


def _tensor_scatter(op_type: str, params: LazyBlob, indices: LazyBlob, updates: LazyBlob,
                    name: str | None) -> LazyBlob:
    for what, blob in (("params", params), ("indices", indices), ("updates", updates)):
        require_blob(blob, f"{op_type}'s {what}")
    return add_op(op_type, {"params": [params], "updates": [updates], "indices": [indices]}, name=name)[0]


def tensor_scatter_nd_update(params: LazyBlob, indices: LazyBlob, updates: LazyBlob,
                             name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.tensor_scatter_nd_update``: ``params`` with the indexed slices replaced by ``updates``
    (with duplicate indices, one of the updates wins, as in OneFlow)."""
    return _tensor_scatter("tensor_scatter_nd_update", params, indices, updates, name)


def tensor_scatter_nd_add(params: LazyBlob, indices: LazyBlob, updates: LazyBlob,
                          name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.tensor_scatter_nd_add``: ``params`` with ``updates`` added at the indexed slices."""
    return _tensor_scatter("tensor_scatter_nd_add", params, indices, updates, name)


# -- dim_gather and dim_scatter_add_like ----------------------------------------------------------------------
def _infer_dim_gather(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, index, dim = ctx.input("input"), ctx.input("index"), ctx.attrs["dim"]
    if not x.shape:
        raise ctx.fail(f"input must have rank >= 1; got {x}")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < len(x.shape):
        raise ctx.fail(f"dim must be in [0, {len(x.shape)}) for input {x}; got {dim!r}")
    if len(index.shape) != len(x.shape) or any(a != b for i, (a, b) in enumerate(zip(x.shape, index.shape))
                                               if i != dim):
        raise ctx.fail(f"index {index} must have input {x}'s rank and its lengths on every axis but dim {dim}")
    return {"output": [BlobDesc(index.shape, x.dtype)]}


def _infer_dim_scatter(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    like, x, index, dim = ctx.input("like"), ctx.input("input"), ctx.input("index"), ctx.attrs["dim"]
    if x.shape != index.shape or len(like.shape) != len(x.shape) or not 0 <= dim < len(x.shape):
        raise ctx.fail(f"input {x} and index {index} must have one shape, of like {like}'s rank; dim {dim}")
    return {"output": [BlobDesc(like.shape, x.dtype)]}


def _dim_gather_sbp(ctx: SbpCtx) -> list[Signature]:
    """dim_gather_op.cpp: every axis but dim splits all three; index S(dim) with input B splits the output."""
    dim = ctx.attrs["dim"]
    sigs = [ctx.make({"input": BROADCAST if i == dim else split(i), "index": split(i), "output": split(i)})
            for i in range(ctx.ndim("index"))]
    sigs.append(ctx.make({"input": PARTIAL_SUM, "index": BROADCAST, "output": PARTIAL_SUM}))
    return sigs


def _dim_scatter_sbp(ctx: SbpCtx) -> list[Signature]:
    """The adjoint of dim_gather's: input and index split on dim scatter into the whole like: P."""
    dim = ctx.attrs["dim"]
    sigs = [ctx.make({"like": BROADCAST if i == dim else split(i), "input": split(i), "index": split(i),
                      "output": PARTIAL_SUM if i == dim else split(i)}) for i in range(ctx.ndim("index"))]
    sigs.append(ctx.make({"like": BROADCAST, "input": PARTIAL_SUM, "index": BROADCAST, "output": PARTIAL_SUM}))
    return sigs


def _grad_dim_gather(ctx: Any) -> None:
    dx = add_op("dim_scatter_add_like", {"like": [ctx.x("input")], "input": [ctx.dy("output")],
                                         "index": [ctx.x("index")]}, {"dim": ctx.attrs["dim"]})[0]
    ctx.set_dx("input", dx)


register_op(OpDef("dim_gather", ("input", "index"), ("output",), _infer_dim_gather, {"dim": REQUIRED},
                  grad=_grad_dim_gather, dtypes={"input": ANY, "index": INDEX}, sbp=_dim_gather_sbp))
register_op(OpDef("dim_scatter_add_like", ("like", "input", "index"), ("output",), _infer_dim_scatter,
                  {"dim": REQUIRED}, dtypes={"like": ANY, "input": ARITHMETIC, "index": INDEX},
                  sbp=_dim_scatter_sbp))


def dim_gather(input: LazyBlob, dim: int, index: LazyBlob, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.dim_gather`` (torch.gather): ``out[i][j][k] = input[index[i][j][k]][j][k]`` for dim 0;
    ``index`` has ``input``'s shape but on ``dim``."""
    require_blob(input, "dim_gather's input")
    require_blob(index, "dim_gather's index")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise OpInferError(f"{_where()}dim_gather: dim must be an int; got {dim!r}")
    return add_op("dim_gather", {"input": [input], "index": [index]}, {"dim": dim}, name)[0]


__all__ = ["dim_gather", "gather_nd", "scatter_nd", "tensor_scatter_nd_add", "tensor_scatter_nd_update"]
