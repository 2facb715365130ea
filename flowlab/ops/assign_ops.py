"""``flow.assign(ref, value)`` and ``flow.nn.compat_conv2d``: two OneFlow v0.3.4 user functions its model tests
(models/test_dqn.py) call, over ops flowlab has: assign (assign_op.py: the user op ``assign``, writing the
variable ``ref`` in place) and conv2d (nn_ops.py's tf_conv2d, exported as ``nn.compat_conv2d``, is conv2d with
TensorFlow's argument order)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import current_builder
from ..frontend.location import user_location
from ._common import require_blob


def assign(ref: LazyBlob, value: LazyBlob, dtype: Any = None, name: str | None = None) -> None:
    """OneFlow's ``flow.assign``: write ``value`` into the variable ``ref`` (after every op of the job that reads
    it so far, as the optimizer's updates are ordered)."""
    require_blob(ref, "assign's ref")
    require_blob(value, "assign's value")
    builder = current_builder()
    producer = next((op for op in builder.ops if ref.lbn in op.output_lbns), None)
    if producer is None or producer.op_type != "variable":
        loc = user_location()
        raise OpInferError(f"{loc + ': ' if loc else ''}assign writes a variable in place: ref must be the blob "
                           f"flow.get_variable returned; got {ref.lbn} ({producer.op_type if producer else '?'})")
    readers = tuple(op.name for op in builder.ops if ref.lbn in op.input_lbns)
    builder.add_op("assign", {"ref": [ref], "value": [value]}, name=name or builder.unique_name("Assign"),
                   ctrl_in_op_names=readers, scoped=False)


def compat_conv2d(input: LazyBlob, filters: LazyBlob, strides: int | Sequence[int], padding: str,
                  data_format: str = "NCHW", dilations: int | Sequence[int] | None = None, groups: int = 1,
                  name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.nn.compat_conv2d``: ``flow.nn.conv2d`` (padding as a string, any case: "same", "VALID")."""
    from .cnn_ops import conv2d

    if isinstance(padding, str):
        padding = padding.upper()
    return conv2d(input, filters, strides, padding, data_format, dilations, groups, name)


__all__ = ["assign", "compat_conv2d"]
