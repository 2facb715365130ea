"""OneFlow v0.3.4's 1-D and 3-D convolutions (``flow.nn.conv1d``, ``conv3d``, ``flow.layers.conv1d``,
``conv3d``) and ``flow.nn.compat_conv2d``, built over flowlab's conv2d op (OneFlow has conv1d and conv3d ops;
these decompositions compute each output element as the same sum over the same window, in another order):

- conv1d: the (N, C, L) input is an (N, C, 1, L) image and the (F, C/g, k) filter an (F, C/g, 1, k) one;
- conv2d_transpose (OneFlow's deconv2d op): an op here too, whose kernels are conv2d's input-gradient kernels;
- conv3d: the input is padded in depth (``flow.pad``); for each depth tap i of the filter, the depth slices the
  outputs read through it (stride and dilation in depth) are a batch of 2-D images convolved with filter slice i,
  and the taps' results are added (``add_n``).

Channels-last layouts (NWC, NDHWC) transpose to channels-first and back, their filters from OneFlow's
channels-last layout (F, k..., C/g)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ._common import require_blob, same_dtype
from .array_ops import reshape, transpose
from .cnn_ops import conv2d, conv2d_layer_epilogue, explicit_pads, window_out_hw
from .gather_slice_ops import slice_v2
from .initializers import xavier_uniform_initializer
from .nary_ops import add_n
from .pad_nd import pad
from .registry import FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import batch_and
from .variable import get_variable


def _infer_deconv(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, w = ctx.input("in"), ctx.input("weight")
    same_dtype(ctx, x, w)
    if len(x.shape) != 4 or len(w.shape) != 4 or x.shape[1] != w.shape[0]:
        raise ctx.fail(f"deconv2d needs an NCHW input and an (in channels, out channels, kh, kw) weight with the "
                       f"input's channels first; got {x} and {w}")
    out = (x.shape[0], w.shape[1], *ctx.attrs["output_hw"])
    if window_out_hw(ctx, out, w.shape[2:]) != x.shape[2:]:
        raise ctx.fail(f"output shape {list(out)} does not give the input {x} back through a {w.shape[2]}x"
                       f"{w.shape[3]} convolution with strides {ctx.attrs['strides']} and pads {ctx.attrs['pads']}")
    return {"out": [BlobDesc(out, x.dtype)]}


def _grad_deconv(ctx: Any) -> None:
    # deconv2d is conv2d's input gradient: its adjoint is conv2d, its filter gradient conv2d's filter gradient
    # with the roles of input and output exchanged
    attrs = {k: ctx.attrs[k] for k in ("strides", "dilations", "pads", "groups")}
    dy, x, w = ctx.dy("out"), ctx.x("in"), ctx.x("weight")
    if ctx.needs_dx("in"):
        ctx.set_dx("in", add_op("conv2d", {"in": [dy], "weight": [w]}, attrs)[0])
    if ctx.needs_dx("weight"):
        ctx.set_dx("weight", add_op("conv2d_filter_grad", {"dy": [x], "x": [dy], "like": [w]}, attrs)[0])


register_op(OpDef("deconv2d", ("in", "weight"), ("out",), _infer_deconv,
                  {"strides": REQUIRED, "dilations": REQUIRED, "pads": REQUIRED, "groups": 1, "output_hw": REQUIRED},
                  grad=_grad_deconv, dtypes=dtypes_of(("in", "weight"), FLOATING),
                  sbp=batch_and((0,), broadcast=("weight",))))


def _seq(value: int | Sequence[int] | None, n: int, what: str) -> tuple[int, ...]:
    """OneFlow's _GetSequence: an int (or a 1-list) for every axis, or one per axis."""
    if value is None:
        return (1,) * n
    if isinstance(value, int):
        return (value,) * n
    vals = tuple(value)
    if len(vals) == 1:
        return vals * n
    if len(vals) != n or not all(isinstance(v, int) for v in vals):
        raise ValueError(f"{what} should be an int or a list of 1 or {n} ints; got {value!r}")
    return vals


def _layout(data_format: str, nd: int) -> bool:
    """True for channels-last (NWC / NDHWC), False for channels-first (NCW / NCDHW)."""
    first, last = ("NCW", "NWC") if nd == 1 else ("NCDHW", "NDHWC")
    fmt = data_format.upper()
    if fmt in (first, "CHANNELS_FIRST"):
        return False
    if fmt in (last, "CHANNELS_LAST"):
        return True
    raise ValueError(f"data_format must be {first!r} or {last!r}; got {data_format!r}")


def _channels_first_padding(padding: Any, nd: int, last: bool) -> Any:
    # explicit padding lists have one entry per dimension of the data_format; move C to position 1
    if isinstance(padding, (list, tuple)):
        if len(padding) != nd + 2:
            raise ValueError(f"explicit padding needs {nd + 2} entries (one per dimension); got {padding!r}")
        return [padding[0], padding[-1], *padding[1:-1]] if last else list(padding)
    return padding


def _axis_pads(padding: Any, sizes: tuple[int, ...], kernel: tuple[int, ...], strides: tuple[int, ...],
               dilations: tuple[int, ...]) -> list[tuple[int, int]]:
    """(before, after) per spatial axis of a channels-first padding (strings as conv2d reads them)."""
    pads: list[tuple[int, int]] = []
    for i in range(0, len(sizes), 2):  # explicit_pads works on axis pairs
        j = min(i + 1, len(sizes) - 1)
        if isinstance(padding, (list, tuple)):
            spec = [[0, 0], [0, 0], padding[2 + i], padding[2 + j]]
        else:
            spec = padding
        t, b, left, r = explicit_pads(spec, (sizes[i], sizes[j]), (kernel[i], kernel[j]), (strides[i], strides[j]),
                                      (dilations[i], dilations[j]))
        pads.append((t, b))
        if j != i:
            pads.append((left, r))
    return pads


def conv1d(input: LazyBlob, filters: LazyBlob, strides: int | Sequence[int], padding: Any,
           data_format: str = "NCW", dilations: int | Sequence[int] | None = None, groups: int = 1,
           name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.nn.conv1d``: an (N, C, L) input (NWC: (N, L, C)) and an (F, C/groups, k) filter (NWC:
    (F, k, C/groups)); ``padding`` "VALID", "SAME" (= "SAME_LOWER"), "SAME_UPPER" or a list of 3 pairs."""
    require_blob(input, "conv1d's input")
    require_blob(filters, "conv1d's filters")
    if len(input.shape) != 3 or len(filters.shape) != 3:
        raise ValueError(f"conv1d needs 3-D input and filters; got {input.blob_desc} and {filters.blob_desc}")
    last = _layout(data_format, 1)
    if last:
        input, filters = transpose(input, [0, 2, 1]), transpose(filters, [0, 2, 1])
    (s,), (d,) = _seq(strides, 1, "strides"), _seq(dilations, 1, "dilations")
    padding = _channels_first_padding(padding, 1, last)
    if isinstance(padding, list):
        padding = [[0, 0], [0, 0], [0, 0], padding[2]]
    n, c, length = input.shape
    f, cg, k = filters.shape
    out = conv2d(reshape(input, [n, c, 1, length]), reshape(filters, [f, cg, 1, k]), (1, s), padding, "NCHW",
                 (1, d), groups, name)
    out = reshape(out, [n, f, out.shape[3]])
    return transpose(out, [0, 2, 1]) if last else out


def conv3d(input: LazyBlob, filters: LazyBlob, strides: int | Sequence[int], padding: Any,
           data_format: str = "NCDHW", dilations: int | Sequence[int] | None = None, groups: int = 1,
           name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.nn.conv3d``: an (N, C, D, H, W) input (NDHWC: (N, D, H, W, C)) and an
    (F, C/groups, kd, kh, kw) filter (NDHWC: (F, kd, kh, kw, C/groups))."""
    require_blob(input, "conv3d's input")
    require_blob(filters, "conv3d's filters")
    if len(input.shape) != 5 or len(filters.shape) != 5:
        raise ValueError(f"conv3d needs 5-D input and filters; got {input.blob_desc} and {filters.blob_desc}")
    last = _layout(data_format, 3)
    if last:
        input, filters = transpose(input, [0, 4, 1, 2, 3]), transpose(filters, [0, 4, 1, 2, 3])
    s, d = _seq(strides, 3, "strides"), _seq(dilations, 3, "dilations")
    n, c, depth, h, w = input.shape
    f, cg, kd, kh, kw = filters.shape
    pads = _axis_pads(_channels_first_padding(padding, 3, last), (depth, h, w), (kd, kh, kw), s, d)
    (front, back), hw_pads = pads[0], [[0, 0], [0, 0], list(pads[1]), list(pads[2])]
    od = (depth + front + back - d[0] * (kd - 1) - 1) // s[0] + 1
    if od <= 0:
        raise ValueError(f"conv3d: a depth-{kd} kernel (dilation {d[0]}) does not fit the padded depth {depth} of "
                         f"{input.blob_desc}")
    if front or back:
        input = pad(input, [[0, 0], [0, 0], [front, back], [0, 0], [0, 0]])
    taps = []
    for i in range(kd):
        start = i * d[0]
        xs = slice_v2(input, [(None, None, None), (None, None, None), (start, start + s[0] * (od - 1) + 1, s[0])])
        xs = reshape(transpose(xs, [0, 2, 1, 3, 4]), [n * od, c, h, w])
        wi = reshape(slice_v2(filters, [(None, None, None), (None, None, None), (i, i + 1, 1)]), [f, cg, kh, kw])
        taps.append(conv2d(xs, wi, s[1:], hw_pads, "NCHW", d[1:], groups))
    total = taps[0] if kd == 1 else add_n(taps)
    out = transpose(reshape(total, [n, od, f, total.shape[2], total.shape[3]]), [0, 2, 1, 3, 4], name=name)
    return transpose(out, [0, 2, 3, 4, 1]) if last else out


def compat_conv2d(input: LazyBlob, filters: LazyBlob, strides: int | Sequence[int], padding: str,
                  data_format: str = "NCHW", dilations: int | Sequence[int] | None = None, groups: int = 1,
                  name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.nn.compat_conv2d``: conv2d with TensorFlow's "SAME" (OneFlow's "SAME_UPPER")."""
    if isinstance(padding, str) and padding.upper() == "SAME":
        padding = "SAME_UPPER"
    return conv2d(input, filters, strides, padding, data_format, dilations, groups, name)


def conv2d_transpose(value: LazyBlob | None = None, filter: LazyBlob | None = None,
                     output_shape: Sequence[int] | None = None, strides: int | Sequence[int] | None = None,
                     padding: str = "VALID", data_format: str = "NCHW", name: str | None = None,
                     input: LazyBlob | None = None, filters: LazyBlob | None = None,
                     dilations: int | Sequence[int] | None = None) -> LazyBlob:
    """OneFlow's ``flow.nn.conv2d_transpose`` (its deconv2d op): the input gradient of the convolution that maps
    ``output_shape`` to the input's shape; filters (in channels, out channels, kh, kw) (NHWC: (in, kh, kw, out)).
    "SAME" pads the odd row/column after (TensorFlow's), "VALID" none; extra output rows a stride leaves
    (OneFlow's output_padding) get no contribution."""
    if (value is None) == (input is None) or (filter is None) == (filters is None):
        raise ValueError("conv2d_transpose: give exactly one of value/input and one of filter/filters")
    x, w = require_blob(input or value, "conv2d_transpose's input"), require_blob(filters or filter,
                                                                              "conv2d_transpose's filters")
    if len(x.shape) != 4 or len(w.shape) != 4 or output_shape is None or len(output_shape) != 4:
        raise ValueError(f"conv2d_transpose needs 4-D input and filters and a 4-D output_shape; got "
                         f"{x.blob_desc}, {w.blob_desc}, output_shape={output_shape!r}")
    last = data_format.upper() == "NHWC"
    if not last and data_format.upper() != "NCHW":
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW'; got {data_format!r}")
    if last:
        x, w = transpose(x, [0, 3, 1, 2]), transpose(w, [0, 3, 1, 2])
        output_shape = [output_shape[0], output_shape[3], output_shape[1], output_shape[2]]
    if output_shape[0] != x.shape[0] or output_shape[1] != w.shape[1]:
        raise ValueError(f"conv2d_transpose: output_shape {list(output_shape)} must have the input's batch "
                         f"{x.shape[0]} and the filters' output channels {w.shape[1]}")
    s, d = _seq(strides, 2, "strides"), _seq(dilations, 2, "dilations")
    if padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f'padding must be "SAME" or "VALID"; got {padding!r}')
    mode = "SAME_UPPER" if padding.upper() == "SAME" else "VALID"
    out_hw = tuple(output_shape[2:])
    pads = explicit_pads(mode, out_hw, w.shape[2:], s, d)
    attrs = {"strides": s, "dilations": d, "pads": pads, "groups": 1, "output_hw": out_hw}
    out = add_op("deconv2d", {"in": [x], "weight": [w]}, attrs, name)[0]
    return transpose(out, [0, 2, 3, 1]) if last else out


def _conv_layer(nd: int, inputs: LazyBlob, filters: int, kernel_size: Any, strides: Any, padding: Any,
                data_format: str, dilation_rate: Any, groups: int, activation: Any, use_bias: bool,
                kernel_initializer: Any, bias_initializer: Any, kernel_regularizer: Any, bias_regularizer: Any,
                trainable: bool, name: str, weight_name: str | None, bias_name: str | None) -> LazyBlob:
    fn = "conv1d" if nd == 1 else "conv3d"
    require_blob(inputs, f"layers.{fn}'s inputs")
    last = _layout(data_format, nd)
    kernel = _seq(kernel_size, nd, "kernel_size")
    channels = inputs.shape[-1 if last else 1]
    if not isinstance(groups, int) or groups <= 0 or filters % groups or channels % groups:
        raise ValueError(f"layers.{fn}: groups={groups!r} must divide filters ({filters}) and the input channels "
                         f"({channels})")
    if last and groups != 1:
        raise ValueError(f"layers.{fn}: groups must be 1 for {data_format} (OneFlow asserts it)")
    shape = (filters, *kernel, channels // groups) if last else (filters, channels // groups, *kernel)
    init = kernel_initializer or xavier_uniform_initializer(data_format)
    kw = {"shape": shape, "dtype": inputs.dtype, "initializer": init, "regularizer": kernel_regularizer,
          "trainable": trainable, "reuse": False}
    if weight_name is None:
        with scope.namespace(name):
            weight = get_variable("weight", **kw)
    else:
        weight = get_variable(weight_name, **kw)
    conv = conv1d if nd == 1 else conv3d
    out = conv(inputs, weight, strides, padding, data_format, dilation_rate, groups, name=name)
    perm_in, perm_out = ([0, 2, 1], [0, 2, 1]) if nd == 1 else ([0, 4, 1, 2, 3], [0, 2, 3, 4, 1])
    if last:  # the bias and activation on the channels-first view
        out = transpose(out, perm_in)
    out = conv2d_layer_epilogue(out, name, filters, use_bias, bias_initializer, bias_regularizer, trainable,
                                activation, bias_name)
    return transpose(out, perm_out) if last else out


def conv1d_layer(inputs: LazyBlob, filters: int, kernel_size: int | Sequence[int] = 1,
                 strides: int | Sequence[int] = 1, padding: Any = "VALID", data_format: str = "NCW",
                 dilation_rate: int | Sequence[int] | None = None, groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, trainable: bool = True,
                 name: str = "Conv1d", weight_name: str | None = None, bias_name: str | None = None) -> LazyBlob:
    """``flow.layers.conv1d``: variables ``<name>-weight`` (F, C/groups, k) (NWC: (F, k, C)) and ``<name>-bias``,
    or ``weight_name`` / ``bias_name``, as OneFlow's."""
    return _conv_layer(1, inputs, filters, kernel_size, strides, padding, data_format, dilation_rate, groups,
                       activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                       bias_regularizer, trainable, name, weight_name, bias_name)


def conv3d_layer(inputs: LazyBlob, filters: int, kernel_size: int | Sequence[int] = 1,
                 strides: int | Sequence[int] = 1, padding: Any = "VALID", data_format: str = "NCDHW",
                 dilation_rate: int | Sequence[int] | None = None, groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, trainable: bool = True,
                 name: str = "Conv3d", weight_name: str | None = None, bias_name: str | None = None) -> LazyBlob:
    """``flow.layers.conv3d``: variables ``<name>-weight`` (F, C/groups, kd, kh, kw) (NDHWC: (F, kd, kh, kw, C))
    and ``<name>-bias``, or ``weight_name`` / ``bias_name``, as OneFlow's."""
    return _conv_layer(3, inputs, filters, kernel_size, strides, padding, data_format, dilation_rate, groups,
                       activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                       bias_regularizer, trainable, name, weight_name, bias_name)


__all__ = ["compat_conv2d", "conv1d", "conv2d_transpose", "conv1d_layer", "conv3d", "conv3d_layer"]
