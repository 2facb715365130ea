"""``flow.experimental``: the parts of OneFlow v0.3.4's ``oneflow/python/experimental`` and the
``experimental.*`` exports of ``ops/array_ops.py`` that flowlab has.

- ``logical_slice(x, slice_tup_list)`` / ``logical_slice_assign(x, value, slice_tup_list)``: OneFlow's slice attrs
  (``_GetSliceAttrs``: positive steps, starts in [-size, size), stops in [-size, size], a short list filled with
  whole axes, the same errors), computed by flowlab's ``slice`` and ``slice_update`` + ``assign`` ops: the values
  OneFlow's logical_slice(_assign) ops give on a split variable (docs/deviations.md).
- ``square_sum(x)``: the sum of squares as a (1,) blob, ``reduce_sum(square(x))`` (docs/deviations.md).
- ``unique_with_counts(x, out_idx=flow.int32)``: ops/unique_ops.py; ``indexed_slices_reduce_sum(indices, values)``
  built of it and ``unsorted_segment_sum`` (docs/deviations.md).
- ``get_interface_blob_value(op_name)`` / ``set_interface_blob_value(op_name, value)``: read and write a variable
  between calls (OneFlow's interface ops; the inputs and returns of a job hold data only during a call here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .frontend.blob import LazyBlob
from .ops.unique_ops import unique_with_counts

SliceTuples = Sequence[Sequence[int | None]]


def _slice_attrs(slice_tup_list: SliceTuples, shape: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """OneFlow's _GetSliceAttrs: (start, stop, step) per axis, normalized, with its errors."""
    ndim = len(shape)
    if not (isinstance(slice_tup_list, (list, tuple)) and len(slice_tup_list) <= ndim):
        raise ValueError("slice_tup_list must be a list or tuple with length less than or equal to number of "
                         f"dimensions of input tensor ({ndim}); got {slice_tup_list!r}")
    tuples = list(slice_tup_list) + [(None, None, None)] * (ndim - len(slice_tup_list))
    out = []
    for slice_tup, size in zip(tuples, shape):
        if not (isinstance(slice_tup, (tuple, list)) and len(slice_tup) == 3):
            raise ValueError(f"element of slice_tup_list must be a list or tuple with form (start, stop, step); "
                             f"got {slice_tup!r}")
        if not all(isinstance(i, int) and not isinstance(i, bool) or i is None for i in slice_tup):
            raise ValueError(f"element of slice tuple must int or None; got {slice_tup!r}")
        start, stop, step = slice_tup
        step = 1 if step is None else step
        if step <= 0:
            raise ValueError(f"slice_assign/logical_slice step must be greater than 0; got {slice_tup!r}")
        if start is None:
            start = 0
        elif not -size <= start < size:
            raise ValueError(f"slice_assign/logical_slice start must be in range [-size, size); got {start} for an "
                             f"axis of size {size}")
        elif start < 0:
            start += size
        if stop is None:
            stop = size
        elif not -size <= stop <= size:
            raise ValueError(f"slice_assign/logical_slice stop must be in range [-size, size]; got {stop} for an "
                             f"axis of size {size}")
        elif stop < 0:
            stop += size
        out.append((start, stop, step))
    return out


def logical_slice(x: LazyBlob, slice_tup_list: SliceTuples, name: str | None = None) -> LazyBlob:
    """The slice of the logical (consistent) blob ``x``, whatever its split."""
    from .ops._common import require_blob
    from .ops.gather_slice_ops import slice_v2

    require_blob(x, "logical_slice's x")
    if name is not None and not isinstance(name, str):
        raise ValueError("name must be a string")
    return slice_v2(x, _slice_attrs(slice_tup_list, x.shape), name=name)


def logical_slice_assign(x: LazyBlob, value: LazyBlob, slice_tup_list: SliceTuples, name: str | None = None) -> None:
    """Write ``value`` into the slice of the variable ``x`` (after the job's earlier readers of it, as
    ``flow.assign``)."""
    from .ops._common import require_blob
    from .ops.assign_ops import assign
    from .ops.slice_update_ops import slice_update

    require_blob(x, "logical_slice_assign's x")
    if name is not None and not isinstance(name, str):
        raise ValueError("name must be a string")
    assign(x, slice_update(x, value, _slice_attrs(slice_tup_list, x.shape)), name=name)


def square_sum(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """The sum of the squares of every element of ``x``, a (1,) blob (OneFlow's square_sum op)."""
    from .ops._common import require_blob
    from .ops.math_ops import square
    from .ops.reduce_ops import reduce_sum

    return reduce_sum(square(require_blob(x, "square_sum's x")), name=name)


def indexed_slices_reduce_sum(indices: LazyBlob, values: LazyBlob, name: str | None = None
                              ) -> tuple[LazyBlob, LazyBlob, LazyBlob]:
    """(y_indices (n,), y_values (n, m), num_unique (1,) int64) of n ``indices`` and their rows of ``values``
    (indices' shape, then m elements each): the distinct indices (first appearance order) and the sum of the rows
    of each; entries past num_unique are 0 (OneFlow's indexed_slices_reduce_sum_op.cpp shapes)."""
    import math

    from .errors import OpInferError
    from .ir.dtype import int64
    from .ops._common import require_blob
    from .ops.array_ops import cast, reshape
    from .ops.registry import INDEX
    from .ops.segment_ops import unsorted_segment_sum

    require_blob(indices, "indexed_slices_reduce_sum's indices")
    require_blob(values, "indexed_slices_reduce_sum's values")
    k, v = indices.shape, values.shape
    if not (len(k) < len(v) and v[:len(k)] == k) or indices.dtype not in INDEX:
        raise OpInferError(f"indexed_slices_reduce_sum: indices {indices.blob_desc} must be integers whose shape "
                           f"begins values' {values.blob_desc} (OneFlow's checks)")
    n = math.prod(k)
    flat = reshape(indices, (n,)) if len(k) != 1 else indices
    y_indices, idx, _count, num = unique_with_counts(flat, name=name)
    rows = reshape(values, (n, math.prod(v) // n))
    return y_indices, unsorted_segment_sum(rows, idx, num_segments=n), cast(num, int64)


def get_interface_blob_value(op_name: str) -> np.ndarray:
    """The current value of variable ``op_name`` (the session compiled first, as OneFlow syncs it)."""
    from .session import default_session, get_all_variables

    default_session().sync()
    values = get_all_variables()
    if op_name not in values:
        raise KeyError(f"get_interface_blob_value: no variable {op_name!r} in the session (flowlab reads the "
                       f"variables' interface blobs; inputs and returns hold data only during a call); variables: "
                       f"{sorted(values)}")
    return np.array(values[op_name])


def set_interface_blob_value(op_name: str, ndarray: Any) -> None:
    """Write ``ndarray`` into variable ``op_name`` (of its shape; cast to its dtype)."""
    from .checkpoint import load_variables
    from .session import default_session

    default_session().sync()
    load_variables({op_name: np.asarray(ndarray)}, ignore_mismatch=False)


__all__ = ["get_interface_blob_value", "indexed_slices_reduce_sum", "logical_slice", "logical_slice_assign",
           "set_interface_blob_value", "square_sum", "unique_with_counts"]
