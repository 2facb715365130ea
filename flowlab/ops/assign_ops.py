"""``flow.assign(ref, value)``: the OneFlow v0.3.4 user function its model tests (models/test_dqn.py) call, over
the user op ``assign`` (assign_op.py), which writes the variable ``ref`` in place. (``flow.nn.compat_conv2d``,
which the same tests call, is ops/conv_nd_ops.py's.)"""

from __future__ import annotations

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
    op_name = name or builder.unique_name("Assign")
    builder.add_op("assign", {"ref": [ref], "value": [value]}, name=op_name, ctrl_in_op_names=readers, scoped=False)
    sbp = builder.sbp_hints.get(producer.name, {}).get("out")
    if sbp is not None:  # a split variable is written where it lies: the value is boxed to its split
        builder.set_sbp_hint(op_name, "ref_0", sbp)


__all__ = ["assign"]
