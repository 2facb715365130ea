"""``flow.get_variable``: a variable op whose output memory holds the variable, shared by name across jobs."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

from ..errors import OpInferError
from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import current_builder
from ..frontend.hints import as_sbp_hint
from ..frontend.location import user_location
from ..ir.dtype import DType, as_dtype


def get_variable(
    name: str,
    shape: Sequence[int] | None = None,
    dtype: DType | None = None,
    initializer: dict[str, Any] | None = None,
    regularizer: dict[str, Any] | None = None,
    trainable: bool = True,
    model_name: str | None = None,
    random_seed: int | None = None,
    distribute: Any = None,
    reuse: bool = True,
) -> LazyBlob:
    """Create (or, with ``reuse``, return) the variable ``name`` of the job being traced.

    Variables are initialized by the System-ModelInit job when the session starts; the same name in two jobs
    is the same variable (one memory block).
    """
    builder = current_builder()
    full_name = scope.scoped_name(name)
    if full_name in builder.variables:
        existing = builder.variables[full_name]
        if not reuse:
            raise OpInferError(f"variable {full_name!r} already exists in job {builder.job_name!r} and reuse=False")
        if shape is not None and tuple(shape) != existing.shape:
            raise OpInferError(
                f"variable {full_name!r} exists with shape {existing.shape}; asked again with shape {tuple(shape)}"
            )
        return existing
    if shape is None or not all(isinstance(d, int) and d > 0 for d in shape):
        raise OpInferError(f"get_variable({full_name!r}) needs a shape of positive ints; got {shape!r}")
    if dtype is None:
        dtype = as_dtype(builder.job_conf.get("default_data_type") or "float32")
    if initializer is None:
        initializer = {"type": "constant", "value": 0.0}
    if not isinstance(initializer, dict) or "type" not in initializer:
        raise TypeError(f"initializer must come from flow.*_initializer(...); got {initializer!r}")
    if random_seed is None:  # deterministic per name, so a fresh session initializes identically
        random_seed = zlib.crc32(full_name.encode())
    attrs = {
        "shape": tuple(shape),
        "dtype": as_dtype(dtype),
        "initializer": initializer,
        "random_seed": int(random_seed),
        "trainable": bool(trainable),
        "regularizer": regularizer,
    }
    sbp = as_sbp_hint(distribute, tuple(shape), f"get_variable({full_name!r}, distribute=...)", user_location())
    (blob,) = builder.add_op("variable", attrs=attrs, name=full_name, scoped=False)
    if sbp is not None:  # OneFlow's variable_conf.split_axis: the variable lies split, or B
        builder.set_sbp_hint(full_name, "out", sbp)
    builder.variables[full_name] = blob
    return blob
