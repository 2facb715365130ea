"""``flow.math``: elementwise math and reductions."""

from .ops.activation_ops import gelu  # OneFlow exports its (erf) gelu as flow.math.gelu
from .ops.binary_ops import atan2, clip_by_value, floordiv, pow, squared_difference, xdivy, xlogy
from .ops.compare_ops import (
    broadcast_to_compatible_with,
    equal,
    floor_mod,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    maximum,
    minimum,
    not_equal,
)
from .ops.creation_ops import fused_scale_tril, tril
from .ops.dynamic_ops import reduced_shape_elem_cnt
from .ops.l2_normalize_ops import l2_normalize
from .ops.math_ops import (
    abs,
    add,
    divide,
    exp,
    log,
    multiply,
    negative,
    reciprocal,
    relu,
    sigmoid,
    sign,
    sqrt,
    square,
    subtract,
    tanh,
)
from .ops.nary_ops import add_n
from .ops.norm_functional import reduce_std, reduce_variance
from .ops.reduce_ops import (
    argmax,
    polyval,
    reduce_all,
    reduce_any,
    reduce_euclidean_norm,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from .ops.segment_ops import unsorted_batch_segment_sum, unsorted_segment_sum, unsorted_segment_sum_like
from .ops.sort_ops import in_top_k, top_k
from .ops.two_stage_ops import two_stage_reduce_max, two_stage_reduce_min
from .ops.unary_ops import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    ceil,
    cos,
    cosh,
    erf,
    erfc,
    expm1,
    floor,
    lgamma,
    log1p,
    log_sigmoid,
    reciprocal_no_nan,
    rint,
    round,
    rsqrt,
    sin,
    sinh,
    softplus,
    tan,
)

__all__ = [
    "abs", "add", "add_n", "argmax", "divide", "exp", "gelu", "log", "multiply", "negative", "reciprocal", "reduce_max",
    "reduce_mean", "reduce_sum", "reduce_variance", "relu", "sigmoid", "sign", "sqrt", "square", "subtract", "tanh",
    "broadcast_to_compatible_with", "equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
    "maximum", "minimum", "mod", "not_equal",
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "erf", "erfc", "expm1", "floor", "lgamma",
    "log1p", "log_sigmoid", "reciprocal_no_nan", "rint", "round", "rsqrt", "sigmoid_v2", "sin", "sinh", "softplus",
    "tan",
    "atan2", "clip_by_value", "floordiv", "pow", "squared_difference", "xdivy", "xlogy",
    "reduce_all", "reduce_any", "reduce_euclidean_norm", "reduce_logsumexp", "reduce_min", "reduce_prod", "reduce_std",
    "l2_normalize", "polyval",
    "fused_scale_tril", "tril",
    "unsorted_segment_sum", "unsorted_segment_sum_like",
    "in_top_k", "top_k",
    "unsorted_batch_segment_sum",
    "reduced_shape_elem_cnt",
    "two_stage_reduce_max", "two_stage_reduce_min",
]
sigmoid_v2 = sigmoid  # OneFlow's sigmoid_v2 computes the same values (its gradient from x, flowlab's from y)
mod = floor_mod  # OneFlow exports floor_mod as flow.math.mod
