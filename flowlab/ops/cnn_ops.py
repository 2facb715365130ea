"""Convolution, pooling and dropout on NCHW blobs (OneFlow's conv2d, max_pool2d, avg_pool2d, dropout, and
layers.conv2d), with gradient rules; NHWC through transposes (``channels_last``). Padding "SAME" follows OneFlow
("SAME_LOWER": an odd extra row/column goes top/left); "SAME_UPPER" is TF's split."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import zlib
from collections.abc import Sequence
from typing import Any

from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..ir import BlobDesc
from ._common import require_blob, same_dtype
from .initializers import constant_initializer, xavier_uniform_initializer
from .registry import FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import batch_and, elementwise
from .variable import get_variable


def pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    if len(value) == 2 and all(isinstance(v, int) for v in value):
        return int(value[0]), int(value[1])
    raise ValueError(f"{what} must be an int or a pair of ints; got {value!r}")


def explicit_pads(padding: Any, in_hw: tuple[int, int], kernel: tuple[int, int], strides: tuple[int, int],
                  dilations: tuple[int, int]) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) for OneFlow's paddings: "VALID"; "SAME_UPPER" (TF's split, the odd row/column
    at the bottom/right); "SAME_LOWER" and "SAME" (OneFlow maps "SAME" to "SAME_LOWER": the odd row/column at
    the top/left); or explicit, one entry per NCHW dimension, each an int (both sides) or a (before, after) pair,
    0 for N and C, e.g. ``[[0, 0], [0, 0], [1, 2], [0, 1]]`` or ``(0, 0, 1, 1)``. An int pads all four sides."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return 0, 0, 0, 0
        if mode not in ("SAME", "SAME_LOWER", "SAME_UPPER"):
            raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'SAME_UPPER', 'VALID' or explicit; "
                             f"got {padding!r}")
        pads: list[int] = []
        for size, k, s, d in zip(in_hw, kernel, strides, dilations):
            out = math.ceil(size / s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            small, large = total // 2, total - total // 2
            pads += [small, large] if mode == "SAME_UPPER" else [large, small]
        return pads[0], pads[1], pads[2], pads[3]
    if isinstance(padding, int) and not isinstance(padding, bool):
        return padding, padding, padding, padding
    pairs = []
    for entry in padding if isinstance(padding, (list, tuple)) and len(padding) == 4 else ():
        if isinstance(entry, int) and not isinstance(entry, bool):
            pairs.append((entry, entry))
        elif isinstance(entry, (list, tuple)) and len(entry) == 2 and all(isinstance(p, int) for p in entry):
            pairs.append((int(entry[0]), int(entry[1])))
    if len(pairs) != 4 or pairs[0] != (0, 0) or pairs[1] != (0, 0) or min(min(p) for p in pairs) < 0:
        raise ValueError("explicit padding is one entry per NCHW dimension, each an int or a (before, after) pair "
                         f"of ints >= 0, with N and C unpadded, e.g. [[0, 0], [0, 0], [1, 1], [2, 2]]; got {padding!r}")
    return pairs[2][0], pairs[2][1], pairs[3][0], pairs[3][1]


def out_size(size: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    """The number of windows (kernel k, stride s, dilation d) along an axis of ``size`` padded by lo and hi: the
    one place conv and pooling output geometry is computed. Kernels read it from the inferred blob descs."""
    return (size + lo + hi - d * (k - 1) - 1) // s + 1


def window_out_hw(ctx: InferCtx, x_shape: tuple[int, ...], kernel_hw: tuple[int, int]) -> tuple[int, int]:
    """(oh, ow) of a conv (dilations in attrs) or pooling (none) window over NCHW ``x_shape``."""
    (sh, sw), (pt, pb, pl, pr) = ctx.attrs["strides"], ctx.attrs["pads"]
    dh, dw = ctx.attrs.get("dilations", (1, 1))
    return (out_size(x_shape[2], kernel_hw[0], sh, dh, pt, pb), out_size(x_shape[3], kernel_hw[1], sw, dw, pl, pr))


def _infer_conv(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, w = ctx.input("in"), ctx.input("weight")
    same_dtype(ctx, x, w)
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ctx.fail(f"conv2d needs an NCHW input and an (out, in/groups, kh, kw) weight; got {x} and {w}")
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    groups = ctx.attrs["groups"]
    if c % groups or o % groups or cg != c // groups:
        raise ctx.fail(f"{c} input channels in {groups} group(s) need weights (out, {c // max(groups, 1)}, kh, kw) "
                       f"with out divisible by {groups}; got weight {w}")
    oh, ow = window_out_hw(ctx, x.shape, (kh, kw))
    if oh <= 0 or ow <= 0:
        dh, dw = ctx.attrs["dilations"]
        raise ctx.fail(f"a {kh}x{kw} kernel (dilation {dh}x{dw}) does not fit the padded {h}x{wd} input")
    return {"out": [BlobDesc((n, o, oh, ow), x.dtype)]}


def _infer_pool(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    if len(x.shape) != 4:
        raise ctx.fail(f"pooling needs an NCHW input; got {x}")
    (kh, kw), (sh, sw), (pt, pb, pl, pr) = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
    oh, ow = window_out_hw(ctx, x.shape, (kh, kw))
    if oh <= 0 or ow <= 0:
        raise ctx.fail(f"a {kh}x{kw} window does not fit the padded {x.shape[2]}x{x.shape[3]} input")
    if pt >= kh or pl >= kw or (oh - 1) * sh - pt >= x.shape[2] or (ow - 1) * sw - pl >= x.shape[3]:
        raise ctx.fail(f"padding {[pt, pb, pl, pr]} leaves {kh}x{kw} windows (strides {sh}x{sw}) over only padding "
                       f"of the {x.shape[2]}x{x.shape[3]} input")
    return {"y": [BlobDesc((x.shape[0], x.shape[1], oh, ow), x.dtype)]}


def _grad_conv(ctx: Any) -> None:
    attrs = {k: ctx.attrs[k] for k in ("strides", "dilations", "pads", "groups")}
    dy, x, w = ctx.dy("out"), ctx.x("in"), ctx.x("weight")
    if ctx.needs_dx("in"):
        ctx.set_dx("in", add_op("conv2d_data_grad", {"dy": [dy], "weight": [w], "like": [x]}, attrs)[0])
    if ctx.needs_dx("weight"):
        ctx.set_dx("weight", add_op("conv2d_filter_grad", {"dy": [dy], "x": [x], "like": [w]}, attrs)[0])


def _grad_pool(ctx: Any) -> None:
    attrs = {k: ctx.attrs[k] for k in ("ksize", "strides", "pads")}
    ins = {"x": [ctx.x("x")], "y": [ctx.y("y")], "dy": [ctx.dy("y")]}
    ctx.set_dx("x", add_op(f"{ctx.op.op_type}_grad", ins, attrs)[0])


def _check_dy(ctx: InferCtx, x_shape: tuple[int, ...], kernel_hw: tuple[int, int]) -> None:
    dy = ctx.input("dy")
    want = (x_shape[0], dy.shape[1], *window_out_hw(ctx, x_shape, kernel_hw))
    if len(dy.shape) != 4 or dy.shape != want:
        raise ctx.fail(f"dy {dy} must have the op's output shape {list(want)}")


def _infer_like(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    like = ctx.input("like").shape
    if ctx.op_type == "conv2d_data_grad":
        _check_dy(ctx, like, ctx.input("weight").shape[2:])
    else:
        _check_dy(ctx, ctx.input("x").shape, like[2:])
    return {"dx": [BlobDesc(like, ctx.input("dy").dtype)]}


def _infer_pool_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    _check_dy(ctx, ctx.input("x").shape, ctx.attrs["ksize"])
    return {"dx": [ctx.input("x")]}


def _infer_dropout(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("in")
    if not 0.0 <= ctx.attrs["rate"] < 1.0:
        raise ctx.fail(f"dropout rate must be in [0, 1); got {ctx.attrs['rate']}")
    return {"out": [x], "mask": [BlobDesc(x.shape, x.dtype)]}


def _grad_dropout(ctx: Any) -> None:
    dx = add_op("dropout_grad", {"dy": [ctx.dy("out")], "mask": [ctx.y("mask")]}, {"rate": ctx.attrs["rate"]})[0]
    ctx.set_dx("in", dx)


_CONV = {"strides": REQUIRED, "dilations": REQUIRED, "pads": REQUIRED, "groups": 1}
_POOL = {"ksize": REQUIRED, "strides": REQUIRED, "pads": REQUIRED}
for _op in (
    OpDef("conv2d", ("in", "weight"), ("out",), _infer_conv, dict(_CONV), grad=_grad_conv,
          sbp=batch_and((0,), broadcast=("weight",))),
    OpDef("conv2d_data_grad", ("dy", "weight", "like"), ("dx",), _infer_like, dict(_CONV),
          sbp=batch_and((0,), broadcast=("weight",))),
    OpDef("conv2d_filter_grad", ("dy", "x", "like"), ("dx",), _infer_like, dict(_CONV),
          sbp=batch_and((0,), broadcast=("like",), partial_out=("dx",))),
    OpDef("max_pool2d", ("x",), ("y",), _infer_pool, dict(_POOL), grad=_grad_pool, sbp=batch_and((0, 1))),
    OpDef("avg_pool2d", ("x",), ("y",), _infer_pool, dict(_POOL), grad=_grad_pool, sbp=batch_and((0, 1))),
    OpDef("max_pool2d_grad", ("x", "y", "dy"), ("dx",), _infer_pool_grad, dict(_POOL), sbp=batch_and((0, 1))),
    OpDef("avg_pool2d_grad", ("x", "y", "dy"), ("dx",), _infer_pool_grad, dict(_POOL), sbp=batch_and((0, 1))),
    OpDef("dropout", ("in",), ("out", "mask"), _infer_dropout, {"rate": REQUIRED, "seed": 0}, grad=_grad_dropout,
          sbp=elementwise("in")),
    OpDef("dropout_grad", ("dy", "mask"), ("dx",), lambda ctx: {"dx": [ctx.input("dy")]}, {"rate": REQUIRED},
          sbp=elementwise("dy")),
):
    register_op(dataclasses.replace(_op, dtypes=dtypes_of(_op.inputs, FLOATING)))


def channels_last(data_format: str) -> bool:
    """True for NHWC (OneFlow's "channels_last"), False for NCHW; anything else is an error. NHWC convolution and
    pooling run as a transpose to NCHW, the NCHW op and a transpose back (the same values: each output element
    is the same sum over the same window)."""
    if data_format in ("NCHW", "channels_first"):
        return False
    if data_format in ("NHWC", "channels_last"):
        return True
    raise ValueError(f"data_format must be 'NCHW' or 'NHWC'; got {data_format!r}")


def _nhwc_padding(padding: Any) -> Any:
    # an explicit list is one entry per dimension of the data_format: NHWC's [N, H, W, C] -> NCHW's order
    if isinstance(padding, (list, tuple)) and len(padding) == 4:
        return [padding[0], padding[3], padding[1], padding[2]]
    return padding


def conv2d(input: LazyBlob, filters: LazyBlob, strides: int | Sequence[int], padding: Any,
           data_format: str = "NCHW", dilations: int | Sequence[int] | None = None, groups: int = 1,
           name: str | None = None) -> LazyBlob:
    from .array_ops import transpose

    require_blob(input, "conv2d's input")
    require_blob(filters, "conv2d's filters")
    if channels_last(data_format):  # filters (out, kh, kw, in/groups), as OneFlow's channels_last weight
        if len(input.shape) != 4 or len(filters.shape) != 4:
            raise ValueError(f"conv2d needs 4-D input and filters; got {input.blob_desc} and {filters.blob_desc}")
        out = conv2d(transpose(input, [0, 3, 1, 2]), transpose(filters, [0, 3, 1, 2]), strides,
                     _nhwc_padding(padding), "NCHW", dilations, groups, name)
        return transpose(out, [0, 2, 3, 1])
    strides2, dilations2 = pair(strides, "strides"), pair(dilations or 1, "dilations")
    if len(input.shape) != 4 or len(filters.shape) != 4:
        raise ValueError(f"conv2d needs 4-D input and filters; got {input.blob_desc} and {filters.blob_desc}")
    pads = explicit_pads(padding, input.shape[2:], filters.shape[2:], strides2, dilations2)
    attrs = {"strides": strides2, "dilations": dilations2, "pads": pads, "groups": int(groups)}
    return add_op("conv2d", {"in": [input], "weight": [filters]}, attrs, name)[0]


def _pool(kind: str, input: LazyBlob, ksize: Any, strides: Any, padding: Any,
          data_format: str, name: str | None) -> LazyBlob:
    from .array_ops import transpose

    require_blob(input, f"{kind}'s input")
    if channels_last(data_format):
        if len(input.shape) != 4:
            raise ValueError(f"{kind} needs a 4-D input; got {input.blob_desc}")
        out = _pool(kind, transpose(input, [0, 3, 1, 2]), ksize, strides, _nhwc_padding(padding), "NCHW", name)
        return transpose(out, [0, 2, 3, 1])
    k, s = pair(ksize, "ksize"), pair(strides, "strides")
    pads = explicit_pads(padding, input.shape[2:], k, s, (1, 1))
    return add_op(kind, {"x": [input]}, {"ksize": k, "strides": s, "pads": pads}, name)[0]


def max_pool2d(input: LazyBlob, ksize: Any, strides: Any, padding: Any, data_format: str = "NCHW",
               name: str | None = None) -> LazyBlob:
    return _pool("max_pool2d", input, ksize, strides, padding, data_format, name)


def avg_pool2d(input: LazyBlob, ksize: Any, strides: Any, padding: Any, data_format: str = "NCHW",
               name: str | None = None) -> LazyBlob:
    """Average over each window's elements inside the input (padding is not counted, as in TF/OneFlow)."""
    return _pool("avg_pool2d", input, ksize, strides, padding, data_format, name)


def dropout(x: LazyBlob, rate: float, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None) -> LazyBlob:
    """Zero each element with probability ``rate`` and scale the rest by 1/(1-rate); the identity in predict jobs."""
    require_blob(x, "dropout's input")
    if noise_shape is not None:
        raise NotImplementedError("flowlab's dropout draws one mask per element (noise_shape=None)")
    builder = current_builder()
    if builder.job_conf.get("job_type") != "train" or rate == 0:
        return x
    op_name = scope.scoped_name(name) if name is not None else builder.unique_name("dropout")
    if seed is None:  # OneFlow draws a random seed; a seed from the op name keeps runs repeatable and masks apart
        seed = zlib.crc32(op_name.encode())
    return add_op("dropout", {"in": [x]}, {"rate": float(rate), "seed": int(seed)}, op_name, scoped=False)[0]


def conv2d_layer(inputs: LazyBlob, filters: int, kernel_size: int | Sequence[int] = 1,
                 strides: int | Sequence[int] = 1, padding: Any = "VALID", data_format: str = "NCHW",
                 dilation_rate: int | Sequence[int] = 1, groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: dict[str, Any] | None = None,
                 bias_initializer: dict[str, Any] | None = None, kernel_regularizer: dict[str, Any] | None = None,
                 bias_regularizer: dict[str, Any] | None = None, trainable: bool = True, name: str = "Conv2d",
                 weight_name: str | None = None, bias_name: str | None = None) -> LazyBlob:
    """``flow.layers.conv2d``: variables ``<name>-weight`` (filters, in/groups, kh, kw) and ``<name>-bias``, or
    ``weight_name`` / ``bias_name`` as given, outside the name scope, as in OneFlow; the conv op is ``name``.
    NHWC: the weight is (filters, kh, kw, in/groups), OneFlow's channels_last layout."""
    from .array_ops import transpose

    require_blob(inputs, "conv2d's inputs")
    nhwc = channels_last(data_format)
    kh, kw = pair(kernel_size, "kernel_size")
    channels = inputs.shape[3 if nhwc else 1]
    if not isinstance(groups, int) or groups <= 0 or filters % groups or channels % groups:
        raise ValueError(f"groups={groups!r} must divide filters ({filters}) and the input channels "
                         f"({channels})")
    shape = (filters, kh, kw, channels // groups) if nhwc else (filters, channels // groups, kh, kw)
    init = kernel_initializer or xavier_uniform_initializer(data_format)
    with scope.namespace(name) if weight_name is None else contextlib.nullcontext():
        weight = get_variable(weight_name or "weight", shape=shape, dtype=inputs.dtype, initializer=init,
                              regularizer=kernel_regularizer, trainable=trainable)
    out = conv2d(inputs, weight, strides, padding, data_format, dilation_rate, groups, name=name)
    if nhwc:  # the bias and activation on the NCHW view (bias_add on axis 1), then back
        nchw = conv2d_layer_epilogue(transpose(out, [0, 3, 1, 2]), name, filters, use_bias, bias_initializer,
                                     bias_regularizer, trainable, activation, bias_name)
        return transpose(nchw, [0, 2, 3, 1])
    return conv2d_layer_epilogue(out, name, filters, use_bias, bias_initializer, bias_regularizer, trainable,
                                 activation, bias_name)


def conv2d_layer_epilogue(out: LazyBlob, name: str, filters: int, use_bias: bool, bias_initializer: Any,
                          bias_regularizer: Any, trainable: bool, activation: Any, bias_name: str | None
                          ) -> LazyBlob:
    """The conv layers' ``<name>-bias`` (or ``bias_name``) added on axis 1, then the activation."""
    from .layers import bias_and_activation
    from .nn_ops import bias_add

    if use_bias and bias_name is not None:  # a named bias lives outside the scope; its bias_add inside
        bias = get_variable(bias_name, shape=(filters,), dtype=out.dtype, trainable=trainable,
                            initializer=bias_initializer or constant_initializer(0), regularizer=bias_regularizer)
        with scope.namespace(name):
            out = bias_add(out, bias, name="bias_add")
            return activation(out) if activation is not None else out
    with scope.namespace(name):
        return bias_and_activation(out, filters, use_bias, bias_initializer, bias_regularizer, trainable, activation)
