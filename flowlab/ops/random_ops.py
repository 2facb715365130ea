"""Random ops (``flow.nn.random_mask_like`` is ops/random_mask_ops.py's): ``flow.random.bernoulli``,
``flow.random.shuffle`` and
``flow.random.generate_random_batch_permutation_indices`` (OneFlow v0.3.4's random_mask_like_op.cpp,
bernoulli_op.cpp, generate_random_batch_permutation_indices_op.cpp; the user functions in nn_ops.py,
random_ops.py and array_ops.py, shuffle being a gather by a random batch permutation there too).

Each op draws from its own seeded stream (kernels/reference/random.py), a new draw on every run. OneFlow picks a
random seed when none is given; flowlab derives one from the op's name, as its dropout does, so that a program
gives the same draws on every run. Broadcast only: with one seed every device draws the same values, which is a
consistent broadcast blob.
"""

from __future__ import annotations

import zlib

from ..errors import OpInferError
from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..frontend.location import user_location
from ..ir import BlobDesc
from ..ir.dtype import DType, int32
from ._common import require_blob
from .registry import ANY, ARITHMETIC, FLOATING, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import broadcast_only

RANDOM_OPS = ("bernoulli", "generate_random_batch_permutation_indices")  # random_mask_like: random_mask_ops.py


def _where() -> str:
    loc = user_location()
    return f"{loc}: " if loc else ""


def _infer_bernoulli(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dtype = ctx.attrs["dtype"]
    if dtype not in ARITHMETIC:
        raise ctx.fail(f"dtype must be a numeric flowlab dtype; got {dtype!r}")
    return {"out": [BlobDesc(ctx.input("in").shape, dtype)]}


def _infer_permutation(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    if not x.shape:
        raise ctx.fail(f"x must have a batch axis (rank >= 1); got {x}")
    return {"y": [BlobDesc((x.shape[0],), int32)]}


register_op(OpDef("bernoulli", ("in",), ("out",), _infer_bernoulli, {"dtype": REQUIRED, "seed": REQUIRED},
                  dtypes={"in": FLOATING}, sbp=broadcast_only))
register_op(OpDef("generate_random_batch_permutation_indices", ("x",), ("y",), _infer_permutation,
                  {"seed": REQUIRED}, dtypes={"x": ANY}, sbp=broadcast_only))


def _op_name_and_seed(default: str, name: str | None, seed: int | None) -> tuple[str, int]:
    builder = current_builder()
    op_name = scope.scoped_name(name) if name is not None else builder.unique_name(default)
    if seed is None:
        seed = zlib.crc32(op_name.encode())
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise OpInferError(f"{_where()}{default}: seed must be an int or None; got {seed!r}")
    return op_name, seed % (2**63)


def bernoulli(x: LazyBlob, seed: int | None = None, dtype: DType | None = None, name: str = "Bernoulli"
              ) -> LazyBlob:
    """OneFlow's ``flow.random.bernoulli``: 1 with probability ``x`` (elementwise), else 0, in ``dtype``
    (default: ``x``'s)."""
    require_blob(x, "bernoulli's x")
    # OneFlow's module names its first op "Bernoulli" and later ones uniquely: the default name is a prefix here
    op_name, seed = _op_name_and_seed("Bernoulli", None if name == "Bernoulli" else name, seed)
    return add_op("bernoulli", {"in": [x]}, {"dtype": dtype or x.dtype, "seed": seed}, op_name, scoped=False)[0]


def generate_random_batch_permutation_indices(value: LazyBlob, seed: int | None = None,
                                              name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.random.generate_random_batch_permutation_indices``: a random permutation of
    ``range(value.shape[0])``, int32."""
    require_blob(value, "generate_random_batch_permutation_indices's value")
    default = f"{value.op_name}_random_batch_permutation_indices" if name is None else name
    op_name, seed = _op_name_and_seed(default, name, seed)
    return add_op("generate_random_batch_permutation_indices", {"x": [value]}, {"seed": seed}, op_name,
                  scoped=False)[0]


def shuffle(value: LazyBlob, seed: int | None = None, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.random.shuffle``: ``value``'s rows (its first axis) in a random order, built as OneFlow
    builds it: a gather by generate_random_batch_permutation_indices."""
    from .gather_slice_ops import gather

    return gather(value, generate_random_batch_permutation_indices(value, seed, name))


__all__ = ["bernoulli", "generate_random_batch_permutation_indices", "shuffle"]
