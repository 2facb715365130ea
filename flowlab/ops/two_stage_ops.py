"""``flow.math.two_stage_reduce_max`` / ``two_stage_reduce_min`` as OneFlow v0.3.4 builds them
(``python/ops/two_stage_reduce.py``, ``user/ops/two_stage_reduce_ops.cpp``): the input, split on a reduced axis, is
distribute_split into one piece per device; each device reduces its piece (``reduce_max_device_stage``: the
piece's extremum, the mask of the elements equal to it, and how many there are); the per-device results are
distribute_concat-ed and broadcast, and ``reduce_max_global_stage`` reduces them (with the mask of the devices
whose extremum is the global one). The gradient shares dy equally among all the elements equal to the result,
over every device (the global stage weighs each device by its count), as a plain reduce_max's does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import OpInferError
from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..frontend.location import user_location
from ..ir import BlobDesc, ParallelConf
from ..ir.dtype import int8, int32, int64
from ..ir.sbp import BROADCAST, split
from ._common import normalize_axes, require_blob
from .reduce_ops import reduced_shape
from .registry import FLOATING, INDEX, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature, broadcast_only

KINDS = ("reduce_max", "reduce_min")
NUMERIC = FLOATING + (int32, int64)  # OneFlow's FLOATING_DATA_TYPE_SEQ INDEX_DATA_TYPE_SEQ
# The gradients take floating dy only (OneFlow's integer kernels divide dy by the count in integers first); the
# counts take any integer type (OneFlow: int32, which is what the stages make).


def _axes(ctx: InferCtx, rank: int) -> tuple[int, ...]:
    return normalize_axes(ctx, list(ctx.attrs["axis"]), rank) if len(ctx.attrs["axis"]) else tuple(range(rank))


def _infer_device_stage(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    """out and count: the input reduced with the axes kept. ``device_num`` > 1 (the model-parallel loss's
    decomposition, compiler/split_sparse_xent.py) reduces over the last axis only and keeps one column per device:
    OneFlow infers the device stage on one device's piece, flowlab's descs are logical."""
    x, n = ctx.input("in"), ctx.attrs["device_num"]
    axes = _axes(ctx, len(x.shape))
    out = reduced_shape(x.shape, axes, True)
    if n != 1:
        if axes != (len(x.shape) - 1,):
            raise ctx.fail(f"axis {list(ctx.attrs['axis'])} must be the last axis of {x} when device_num is {n} "
                           "(the class axis the model-parallel loss splits)")
        if not 1 <= n <= x.shape[-1]:
            raise ctx.fail(f"device_num {n} must be in [1, {x.shape[-1]}]: each device keeps at least one class")
        out = (*x.shape[:-1], n)
    return {"out": [BlobDesc(out, x.dtype)], "mask": [BlobDesc(x.shape, int8)], "count": [BlobDesc(out, int32)]}


def _infer_device_stage_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dy, mask, count = ctx.input("out_diff"), ctx.input("mask"), ctx.input("count")
    if dy.shape != count.shape:
        raise ctx.fail(f"out_diff {dy} must have the shape of count {count}")
    return {"in_diff": [BlobDesc(mask.shape, dy.dtype)]}


def _infer_global_stage(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, count = ctx.input("in"), ctx.input("device_count")
    if x.shape != count.shape:
        raise ctx.fail(f"device_count {count} must have the shape of in {x}")
    out = reduced_shape(x.shape, _axes(ctx, len(x.shape)), ctx.attrs["keepdims"])
    return {"out": [BlobDesc(out, x.dtype)], "mask": [BlobDesc(x.shape, int8)]}


def _infer_global_stage_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dy, mask, count = ctx.input("out_diff"), ctx.input("mask"), ctx.input("device_count")
    if mask.shape != count.shape:
        raise ctx.fail(f"mask {mask} and device_count {count} must have one shape")
    return {"in_diff": [BlobDesc(mask.shape, dy.dtype)]}


def _device_stage_sbp(args: tuple[str, ...]):
    """GetReduceDeviceStageSbpFn: every blob split on the reduced axis, where the logical blob holds one column
    per device (``device_num`` == the placement's device count); else none (each device-stage op of
    two_stage_reduce lies on one device)."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        if ctx.attrs["device_num"] == 1 or ctx.attrs["device_num"] != ctx.parallel_num:
            return []
        return [ctx.make({a: split(ctx.ndim(args[0]) - 1) for a in args})]

    return rule


def _grad_device_stage(ctx: Any) -> None:
    dy = ctx.dy("out")
    if dy is not None:
        ctx.set_dx("in", add_op(f"{ctx.op.op_type}_grad", {"out_diff": [dy], "mask": [ctx.y("mask")],
                                                          "count": [ctx.y("count")]},
                                {"axis": ctx.attrs["axis"], "device_num": ctx.attrs["device_num"]})[0])


def _grad_global_stage(ctx: Any) -> None:
    dy = ctx.dy("out")
    if dy is not None:
        ctx.set_dx("in", add_op(f"{ctx.op.op_type}_grad", {"out_diff": [dy], "mask": [ctx.y("mask")],
                                                          "device_count": [ctx.x("device_count")]},
                                {"axis": ctx.attrs["axis"], "keepdims": ctx.attrs["keepdims"]})[0])


for _k in KINDS:
    register_op(OpDef(f"{_k}_device_stage", ("in",), ("out", "mask", "count"), _infer_device_stage,
                      {"axis": REQUIRED, "device_num": 1}, grad=_grad_device_stage, dtypes={"in": NUMERIC},
                      sbp=_device_stage_sbp(("in", "out", "mask", "count"))))
    register_op(OpDef(f"{_k}_device_stage_grad", ("out_diff", "mask", "count"), ("in_diff",),
                      _infer_device_stage_grad, {"axis": REQUIRED, "device_num": 1},
                      dtypes={"out_diff": FLOATING, "mask": (int8,), "count": INDEX},
                      sbp=_device_stage_sbp(("mask", "out_diff", "count", "in_diff"))))
    register_op(OpDef(f"{_k}_global_stage", ("in", "device_count"), ("out", "mask"), _infer_global_stage,
                      {"axis": REQUIRED, "keepdims": False}, grad=_grad_global_stage,
                      dtypes={"in": NUMERIC, "device_count": INDEX}, sbp=broadcast_only))
    register_op(OpDef(f"{_k}_global_stage_grad", ("out_diff", "mask", "device_count"), ("in_diff",),
                      _infer_global_stage_grad, {"axis": REQUIRED, "keepdims": False},
                      dtypes={"out_diff": FLOATING, "mask": (int8,), "device_count": INDEX}, sbp=broadcast_only))


def _check_axis(axis: int | Sequence[int] | None, rank: int) -> list[int]:
    """OneFlow's _check_axis: None is every axis; negative axes count from the end."""
    axes = list(range(rank)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        if not isinstance(a, int) or not -rank <= a < rank:
            raise OpInferError(f"{_at()}two_stage_reduce: invalid axis {axis!r} for a rank-{rank} blob")
        out.append(a % rank)
    return out


def _at() -> str:
    loc = user_location()
    return f"{loc}: " if loc else ""


def _two_stage_reduce(kind: str, x: LazyBlob, axis: int | Sequence[int] | None, keepdims: bool,
                      name: str | None) -> LazyBlob:
    from .distribute_ops import add_distribute_op

    require_blob(x, f"the input of two_stage_{kind}")
    axes = _check_axis(axis, len(x.shape))
    sbp = x.distribute
    if sbp is None or not sbp.is_split or sbp.axis not in axes:  # OneFlow's check_x_dictribute
        raise OpInferError(f"{_at()}two_stage_{kind} needs its input split on a reduced axis {axes}, as OneFlow "
                           f"asserts: pass x.with_distribute(flow.distribute.split(axis)); got "
                           f"{'no distribute' if sbp is None else sbp}")
    builder = current_builder()
    placement = scope.current_placement(builder.default_placement)
    n = placement.parallel_num
    name = name if name is not None else _unique(builder, "ReduceMax_" if kind == "reduce_max" else "ReduceMin_")
    attrs = {"axis": sbp.axis, "parallel_num": n}
    pieces = add_distribute_op("distribute_split", [x], attrs, f"{name}_distribute_split")
    outs, counts = [], []
    for i, (machine, device) in enumerate(placement.devices):
        with scope.placed_on(ParallelConf(placement.device_tag, (f"{machine}:{device}",))):
            out, _mask, count = add_op(f"{kind}_device_stage", {"in": [pieces[i]]}, {"axis": axes},
                                       name=f"{name}_device_stage{i}")
        outs.append(out)
        counts.append(count)
    out = add_distribute_op("distribute_concat", outs, attrs, f"{name}_distribute_concat_out")[0]
    count = add_distribute_op("distribute_concat", counts, attrs, f"{name}_distribute_concat_count")[0]
    out, count = (b.with_distribute(BROADCAST) for b in (out, count))  # the global stage reads them whole
    return add_op(f"{kind}_global_stage", {"in": [out], "device_count": [count]},
                  {"axis": axes, "keepdims": bool(keepdims)}, name=f"{name}_global_stage")[0]


def _unique(builder: Any, prefix: str) -> str:
    i = 0
    while builder.has_op(f"{prefix}{i}_global_stage"):
        i += 1
    return f"{prefix}{i}"


def two_stage_reduce_max(x: LazyBlob, axis: int | Sequence[int] | None = None, keepdims: bool = False,
                         name: str | None = None) -> LazyBlob:
    """The maximum over ``axis`` of x split on one of those axes, reduced on each device, then over the devices."""
    return _two_stage_reduce("reduce_max", x, axis, keepdims, name)


def two_stage_reduce_min(x: LazyBlob, axis: int | Sequence[int] | None = None, keepdims: bool = False,
                         name: str | None = None) -> LazyBlob:
    """The minimum over ``axis`` of x split on one of those axes, reduced on each device, then over the devices."""
    return _two_stage_reduce("reduce_min", x, axis, keepdims, name)


__all__ = ["two_stage_reduce_max", "two_stage_reduce_min"]
