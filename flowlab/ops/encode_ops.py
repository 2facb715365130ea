"""``flow.layers.categorical_ordinal_encoder`` and ``flow.categorical_ordinal_encode`` (OneFlow v0.3.4's
categorical_ordinal_encode_op.py / CategoricalOrdinalEncode op): each key (an already hashed integer) gets an
ordinal, 1, 2, 3, ... in the order keys are first seen, kept across runs in a linear-probing table variable of
``capacity`` (key, value) slots and a size variable.

OneFlow's op writes its table and size inputs in place. flowlab's variables are written only by ops without
outputs (assign, the optimizer updates: compiler/inplace.py), so here the op returns the new table and size beside
``out`` and two ``assign`` ops write them back: the same values, one table copy more per run. As OneFlow's kernel,
key 0 is the empty-slot marker (it encodes to 0 and is never stored), and a full table is an error.
"""

from __future__ import annotations

from ..errors import OpInferError
from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..frontend.location import user_location
from ..ir import BlobDesc
from ._common import require_blob
from .registry import INDEX, InferCtx, OpDef, register_op
from .sbp_rules import broadcast_only


def _infer_encode(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, table, size = ctx.input("in"), ctx.input("table"), ctx.input("size")
    if table.dtype != x.dtype or size.dtype != x.dtype:
        raise ctx.fail(f"table {table} and size {size} must have the keys' dtype {x.dtype.name}")
    if len(table.shape) != 1 or table.shape[0] % 2 or not table.shape[0]:
        raise ctx.fail(f"table must be 1-D with 2 * capacity elements (a key and a value per slot); got {table}")
    if size.shape != (1,):
        raise ctx.fail(f"size must have shape (1,); got {size}")
    return {"out": [x], "table_out": [table], "size_out": [size]}


register_op(OpDef("CategoricalOrdinalEncode", ("in", "table", "size"), ("out", "table_out", "size_out"),
                  _infer_encode, {"hash_precomputed": True},
                  dtypes={"in": INDEX, "table": INDEX, "size": INDEX}, sbp=broadcast_only))  # OneFlow: one device


def categorical_ordinal_encode(table: LazyBlob, size: LazyBlob, input_tensor: LazyBlob, hash_precomputed: bool = True,
                               name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.categorical_ordinal_encode``: the ordinals of ``input_tensor``'s keys; ``table`` and
    ``size`` must be the variables that hold the encoder's state (they are written back)."""
    from .assign_ops import assign

    loc = user_location()
    if hash_precomputed is not True:  # OneFlow: assert hash_precomputed is True
        raise OpInferError(f"{loc + ': ' if loc else ''}categorical_ordinal_encode supports only "
                           "hash_precomputed=True (as OneFlow v0.3.4)")
    for what, blob in (("table", table), ("size", size), ("input_tensor", input_tensor)):
        require_blob(blob, f"categorical_ordinal_encode's {what}")
    op_name = scope.scoped_name(name) if name else current_builder().unique_name("CategoricalOrdinalEncode")
    out, new_table, new_size = add_op("CategoricalOrdinalEncode",
                                      {"in": [input_tensor], "table": [table], "size": [size]},
                                      {"hash_precomputed": True}, op_name, scoped=False)
    assign(table, new_table)
    assign(size, new_size)
    return out


def categorical_ordinal_encoder(input_tensor: LazyBlob, capacity: int, hash_precomputed: bool = True,
                                name: str = "CategoricalOrdinalEncoder") -> LazyBlob:
    """OneFlow's ``flow.layers.categorical_ordinal_encoder``: variables ``<name>-Table`` (2 * capacity) and
    ``<name>-Size`` (1) of the keys' dtype, zero-initialized, not trainable, then the op ``<name>-Encode``."""
    from .initializers import constant_initializer
    from .variable import get_variable

    require_blob(input_tensor, "categorical_ordinal_encoder's input_tensor")
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        loc = user_location()
        raise OpInferError(f"{loc + ': ' if loc else ''}categorical_ordinal_encoder: capacity must be a positive "
                           f"int; got {capacity!r}")
    dtype = input_tensor.dtype
    with scope.namespace(name):
        table = get_variable(name="Table", shape=(capacity * 2,), dtype=dtype,
                             initializer=constant_initializer(0, dtype=dtype), trainable=False, reuse=False)
        size = get_variable(name="Size", shape=(1,), dtype=dtype, initializer=constant_initializer(0, dtype=dtype),
                            trainable=False, reuse=False)
        return categorical_ordinal_encode(table, size, input_tensor, hash_precomputed, name="Encode")


__all__ = ["categorical_ordinal_encode", "categorical_ordinal_encoder"]
