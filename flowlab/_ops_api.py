"""Top-level op functions (``flow.reshape``, ``flow.matmul``, ...): the user-facing half of ``flowlab.ops``."""

from .ops.array_ops import (
    cast,
    concat,
    constant,
    expand_dims,
    flatten,
    identity,
    ones_like,
    reshape,
    squeeze,
    transpose,
    zeros_like,
)
from .ops.assign_ops import assign
from .ops.binary_ops import clip_by_value
from .ops.compare_ops import broadcast_to_compatible_with, constant_like, masked_fill, where
from .ops.creation_ops import broadcast_like, ones, reverse, stack, zeros
from .ops.creation_ops import range_ as range
from .ops.dynamic_ops import argwhere, cast_to_static_shape, sync_dynamic_resize
from .ops.encode_ops import categorical_ordinal_encode
from .ops.gather_slice_ops import gather, slice, slice_v2
from .ops.index_ops import one_hot
from .ops.initializers import (
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    kaiming_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal,
    truncated_normal_initializer,
    variance_scaling_initializer,
    xavier_normal_initializer,
    xavier_uniform_initializer,
    zeros_initializer,
)
from .ops.logical_view import cast_to_current_logical_view
from .ops.loss_ops import smooth_l1_loss
from .ops.nary_ops import identity_n
from .ops.nd_index_ops import dim_gather, gather_nd, scatter_nd, tensor_scatter_nd_add, tensor_scatter_nd_update
from .ops.nn_ops import matmul
from .ops.pad import reflection_pad2d, zero_pad2d
from .ops.pad_nd import pad
from .ops.reduce_ops import argmax, count_not_finite, multi_count_not_finite, reduce_max, reduce_mean, reduce_sum
from .ops.segment_ops import unsorted_segment_sum, unsorted_segment_sum_like
from .ops.slice_update_ops import slice_update
from .ops.sort_ops import argsort, in_top_k, sort

__all__ = [
    "argmax", "cast", "cast_to_current_logical_view", "concat", "constant", "constant_initializer", "expand_dims",
    "flatten", "gather",
    "glorot_normal_initializer", "glorot_uniform_initializer", "identity", "kaiming_initializer", "matmul",
    "ones_initializer", "ones_like", "random_normal_initializer", "random_uniform_initializer", "reduce_max",
    "reduce_mean", "reduce_sum", "reflection_pad2d", "reshape", "slice", "slice_v2", "squeeze", "transpose",
    "truncated_normal", "truncated_normal_initializer", "variance_scaling_initializer", "xavier_normal_initializer",
    "xavier_uniform_initializer", "zero_pad2d", "zeros_initializer", "zeros_like",
    "identity_n", "one_hot", "pad",
    "broadcast_to_compatible_with", "constant_like", "masked_fill", "where",
    "clamp", "clip", "clip_by_scalar", "clip_by_value",
    "count_not_finite", "multi_count_not_finite",
    "broadcast_like", "ones", "range", "reverse", "stack", "zeros",
    "unsorted_segment_sum", "unsorted_segment_sum_like",
    "argsort", "in_top_k", "sort",
    "smooth_l1_loss",
    "dim_gather", "gather_nd", "scatter_nd", "tensor_scatter_nd_add", "tensor_scatter_nd_update",
    "slice_update", "assign", "categorical_ordinal_encode",
    "cast_to_static_shape", "argwhere", "sync_dynamic_resize",
]
clip = clamp = clip_by_scalar = clip_by_value  # OneFlow exports clip_by_value under these names too
