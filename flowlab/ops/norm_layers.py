"""OneFlow v0.3.4's further normalizations and shape layers, built from existing ops as OneFlow builds them
(``oneflow/python/ops/nn_ops.py``, ``prelu.py``): ``flow.nn.layer_norm`` (its CPU path: moments and the
functional batch_normalization), ``flow.nn.InstanceNorm1d/2d/3d`` and ``GroupNorm`` (moments over a reshaped
blob, then ``gamma * x + beta`` variables named ``<name>_gamma`` / ``<name>_beta``), ``flow.nn.PixelShuffle`` /
``PixelShufflev2`` (reshape, transpose, reshape) and ``flow.layers.prelu`` (its variable, then OneFlow's prelu op,
ops/prelu_ops.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ._common import require_blob
from .array_ops import reshape, transpose
from .initializers import constant_initializer, ones_initializer, zeros_initializer
from .math_ops import add, divide, multiply, sqrt, subtract
from .norm_functional import _fail, batch_normalization, moments
from .variable import get_variable


def _unique(prefix: str) -> str:
    """OneFlow's id_util.UniqueStr(prefix): the first ``prefix<i>`` whose variables this job does not have yet
    (so a second unnamed InstanceNorm gets its own gamma and beta)."""
    from ..frontend.builder import current_builder

    builder, i = current_builder(), 0
    while scope.scoped_name(f"{prefix}{i}_gamma") in builder.variables or builder.has_op(f"{prefix}{i}"):
        i += 1
    return f"{prefix}{i}"


def layer_norm(inputs: LazyBlob, gamma: LazyBlob | None = None, beta: LazyBlob | None = None,
               begin_norm_axis: int = 1, begin_params_axis: int = -1, epsilon: float = 1e-5,
               name: str | None = None) -> LazyBlob:
    """Normalize over the axes from ``begin_norm_axis`` on, then ``* gamma + beta`` (blobs of the shape from
    ``begin_params_axis`` on, either optional): OneFlow's CPU path, moments + nn.batch_normalization."""
    require_blob(inputs, "layer_norm's inputs")
    rank = len(inputs.shape)
    if not -rank <= begin_norm_axis < rank:
        raise _fail(f"layer_norm: begin_norm_axis {begin_norm_axis} is out of range for {inputs.blob_desc}")
    param_shape = inputs.shape[begin_params_axis:]
    axis = begin_norm_axis % rank
    mean, variance = moments(inputs, list(range(axis, rank)), keepdims=True)
    out = batch_normalization(inputs, mean, variance, variance_epsilon=epsilon, axis=axis, name=name)
    nd_params_shape = [1] * (rank - len(param_shape)) + list(param_shape)
    if gamma is not None:
        out = multiply(out, reshape(require_blob(gamma, "layer_norm's gamma"), nd_params_shape))
    if beta is not None:
        out = add(out, reshape(require_blob(beta, "layer_norm's beta"), nd_params_shape))
    return out


def InstanceNorm1d(x: LazyBlob, eps: float = 1e-5, affine: bool = True, name: str | None = None) -> LazyBlob:
    """(x - mean) / sqrt(var + eps) over axis 2 of an (N, C, L) blob; with ``affine`` times a (1, C, 1) gamma
    (ones) plus beta (zeros), variables ``<name>_gamma`` and ``<name>_beta``."""
    require_blob(x, "InstanceNorm1d's input")
    if len(x.shape) != 3:
        raise _fail(f"InstanceNorm1d takes an (N, C, L) blob; got {x.blob_desc}")
    name = name if name is not None else _unique("InstanceNorm1D_")
    mean, variance = moments(x, [2], keepdims=True)
    normalized = divide(subtract(x, mean), sqrt(add(variance, float(eps))))
    if not affine:
        return normalized
    channel = x.shape[1]
    gamma = get_variable(f"{name}_gamma", shape=(1, channel, 1), dtype=x.dtype, initializer=ones_initializer(),
                         trainable=True)
    beta = get_variable(f"{name}_beta", shape=(1, channel, 1), dtype=x.dtype, initializer=zeros_initializer(),
                        trainable=True)
    return add(multiply(gamma, normalized), beta)


def _instance_norm_nd(x: LazyBlob, rank: int, eps: float, affine: bool, name: str | None, fn: str) -> LazyBlob:
    require_blob(x, f"{fn}'s input")
    if len(x.shape) != rank:
        raise _fail(f"{fn} takes a rank-{rank} blob; got {x.blob_desc}")
    name = name if name is not None else _unique(f"InstanceNorm{rank - 2}D_")
    flat = reshape(x, [x.shape[0], x.shape[1], -1])
    return reshape(InstanceNorm1d(flat, eps=eps, affine=affine, name=name), list(x.shape))


def InstanceNorm2d(x: LazyBlob, eps: float = 1e-5, affine: bool = True, name: str | None = None) -> LazyBlob:
    """InstanceNorm1d of the (N, C, H*W) view."""
    return _instance_norm_nd(x, 4, eps, affine, name, "InstanceNorm2d")


def InstanceNorm3d(x: LazyBlob, eps: float = 1e-5, affine: bool = True, name: str | None = None) -> LazyBlob:
    """InstanceNorm1d of the (N, C, D*H*W) view."""
    return _instance_norm_nd(x, 5, eps, affine, name, "InstanceNorm3d")


def GroupNorm(x: LazyBlob, num_groups: int = 32, eps: float = 1e-5, affine: bool = True,
              name: str | None = None) -> LazyBlob:
    """InstanceNorm1d of the (N, num_groups, rest) view, as OneFlow's group_normalization (so its gamma and beta
    are per group, shape (1, num_groups, 1), as OneFlow v0.3.4 has them)."""
    require_blob(x, "GroupNorm's input")
    if len(x.shape) < 3:
        raise _fail(f"GroupNorm takes a blob of rank 3 or more; got {x.blob_desc}")
    if x.shape[1] % num_groups:
        raise _fail(f"GroupNorm: the channels ({x.shape[1]} in {x.blob_desc}) should be divisible by num_groups "
                    f"({num_groups})")
    name = name if name is not None else _unique("GroupNorm_")
    grouped = reshape(x, [x.shape[0], num_groups, -1])
    return reshape(InstanceNorm1d(grouped, eps=eps, affine=affine, name=name), list(x.shape))


def PixelShufflev2(input: LazyBlob, h_upscale_factor: int, w_upscale_factor: int,
                   name: str | None = None) -> LazyBlob:
    """(N, C*h*w, H, W) -> (N, C, H*h, W*w), OneFlow's reshape / transpose [0, 1, 4, 2, 5, 3] / reshape."""
    require_blob(input, "PixelShuffle's input")
    if not (h_upscale_factor > 0 and w_upscale_factor > 0):
        raise _fail("PixelShuffle: the scale factor of height and width must be larger than zero; got "
                    f"{h_upscale_factor}, {w_upscale_factor}")
    if len(input.shape) != 4:
        raise _fail(f"PixelShuffle only accepts 4-D blobs; got {input.blob_desc}")
    n, c, h, w = input.shape
    if c % (h_upscale_factor * w_upscale_factor):
        raise _fail(f"PixelShuffle: the channels of {input.blob_desc} must be divisible by "
                    f"h_upscale_factor * w_upscale_factor = {h_upscale_factor * w_upscale_factor}")
    new_c = c // (h_upscale_factor * w_upscale_factor)
    out = reshape(input, [n, new_c, h_upscale_factor * w_upscale_factor, h, w])
    out = reshape(out, [n, new_c, h_upscale_factor, w_upscale_factor, h, w])
    out = transpose(out, [0, 1, 4, 2, 5, 3])
    return reshape(out, [n, new_c, h * h_upscale_factor, w * w_upscale_factor], name=name)


def PixelShuffle(input: LazyBlob, upscale_factor: int, name: str | None = None) -> LazyBlob:
    """PixelShufflev2 with one factor for both axes."""
    return PixelShufflev2(input, upscale_factor, upscale_factor, name=name)


def prelu(inputs: LazyBlob, alpha_initializer: Any = None, alpha_regularizer: Any = None,
          shared_axes: Sequence[int] | None = None, trainable: bool = True, name: str = "PRelu",
          model_distribute: Any = None) -> LazyBlob:
    """x for x > 0, alpha * x otherwise, with a variable ``<name>-alpha`` of the input's shape without its first
    axis (size 1 on ``shared_axes``), initialized to 0 by default, as OneFlow's layers.prelu."""
    require_blob(inputs, "prelu's inputs")
    alpha_shape = list(inputs.shape[1:])
    for i in shared_axes or ():
        if not 1 <= i < len(inputs.shape):
            raise _fail(f"prelu: shared axis {i} must be in [1, {len(inputs.shape)}) for {inputs.blob_desc}")
        alpha_shape[i - 1] = 1
    kw = {} if model_distribute is None else {"distribute": model_distribute}
    with scope.namespace(name):
        alpha = get_variable("alpha", shape=tuple(alpha_shape), dtype=inputs.dtype,
                             initializer=alpha_initializer or constant_initializer(0), regularizer=alpha_regularizer,
                             trainable=trainable, reuse=False, **kw)
    return add_op("prelu", {"x": [inputs], "alpha": [alpha]}, name=name)[0]


def batch_normalization_add_relu(inputs: LazyBlob, addend: LazyBlob | None = None, axis: int = -1,
                                 momentum: float = 0.99, epsilon: float = 0.001, center: bool = True,
                                 scale: bool = True, beta_initializer: Any = None, gamma_initializer: Any = None,
                                 beta_regularizer: Any = None, gamma_regularizer: Any = None,
                                 moving_mean_initializer: Any = None, moving_variance_initializer: Any = None,
                                 trainable: bool = True, training: bool = True, name: str = "BatchNorm") -> LazyBlob:
    """relu(batch_normalization(inputs) + addend): OneFlow's CPU (and inference) path; its GPU training path is a
    fused op computing the same."""
    from .math_ops import relu as relu_
    from .norm_ops import batch_normalization

    out = batch_normalization(inputs, axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
                              beta_regularizer, gamma_regularizer, moving_mean_initializer,
                              moving_variance_initializer, trainable, training, name)
    with scope.namespace("BatchNormAddRelu"):
        if addend is not None:
            out = add(out, require_blob(addend, "batch_normalization_add_relu's addend"))
        return relu_(out)


def batch_normalization_relu(inputs: LazyBlob, axis: int = -1, momentum: float = 0.99, epsilon: float = 0.001,
                             center: bool = True, scale: bool = True, beta_initializer: Any = None,
                             gamma_initializer: Any = None, beta_regularizer: Any = None,
                             gamma_regularizer: Any = None, moving_mean_initializer: Any = None,
                             moving_variance_initializer: Any = None, trainable: bool = True, training: bool = True,
                             name: str = "BatchNorm") -> LazyBlob:
    """relu(batch_normalization(inputs)), as OneFlow's (batch_normalization_add_relu without an addend)."""
    return batch_normalization_add_relu(inputs, None, axis, momentum, epsilon, center, scale, beta_initializer,
                                        gamma_initializer, beta_regularizer, gamma_regularizer,
                                        moving_mean_initializer, moving_variance_initializer, trainable, training,
                                        name)


__all__ = ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "PixelShuffle", "PixelShufflev2",
           "batch_normalization_add_relu", "batch_normalization_relu", "layer_norm", "prelu"]
