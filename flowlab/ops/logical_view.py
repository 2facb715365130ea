"""``flow.cast_to_current_logical_view``: move a blob into the view the code around it is traced in.

OneFlow (python/advanced/distribute_ops.py) traces ``flow.identity(x)`` when ``x`` is consistent and the current
view mirrored, or the other way round, and returns ``x`` otherwise. The identity traced in the mirrored view is
a mirrored op, which takes a consistent blob as each device's piece (a variable, B, is cloned to every device).
The identity traced in the consistent view reads the mirrored pieces as one consistent blob; OneFlow's view of a
mirrored blob is S(0) (its pieces concatenated on axis 0) unless every input it came from was broadcast, so here
a mirrored blob that descends from per-device data (a ``ListNumpy`` placeholder) is taken as its pieces
concatenated, and any other as one device's piece. SBP inference checks that guess against the pieces' SBP.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..frontend.hints import as_sbp_hint
from ..frontend.location import user_location
from ..ir.job import descends_from_per_device_data


def cast_to_current_logical_view(x: LazyBlob) -> LazyBlob:
    """``x`` in the current view: ``x`` itself when it is already there, else an identity op traced here."""
    if not isinstance(x, LazyBlob):
        raise TypeError(f"cast_to_current_logical_view takes a blob made inside the job function; "
                        f"got {type(x).__name__}")
    builder = current_builder()
    mirrored_now = scope.current_view(builder.default_view) == "mirrored"
    if (x.op_name in builder.mirrored_op_names) == mirrored_now:
        return x
    if mirrored_now:
        return add_op("identity", {"in": [x]})[0]
    ops = {op.name: op for op in builder.ops}
    parallel_num = ops[x.op_name].parallel_conf.parallel_num
    desc = x.blob_desc
    if parallel_num > 1 and desc.shape and descends_from_per_device_data(ops, builder.mirrored_op_names, x.op_name):
        shape = (desc.shape[0] * parallel_num, *desc.shape[1:])
        desc = dataclasses.replace(desc, shape=shape)
    # the identity infers its output from this handle: the consistent (logical) desc of the pieces
    return add_op("identity", {"in": [LazyBlob(x.lbn, desc, builder, x.distribute)]})[0]


def parallel_cast(input: LazyBlob, name: str | None = None, distribute: Any = None,
                  gradient_distribute: Any = None) -> LazyBlob:
    """OneFlow's ``flow.parallel_cast(x, distribute=flow.distribute.split(0))``: the blob unchanged, laid out as
    ``distribute`` asks (an identity op whose input takes that SBP, so boxing moves it there first; None: as it
    lies). ``gradient_distribute`` asks the same of the gradient in OneFlow; flowlab checks it and lets SBP
    inference place the gradient (the values are the same either way; docs/oneflow-api.md)."""
    if not isinstance(input, LazyBlob):
        raise TypeError(f"parallel_cast takes a blob made inside the job function; got {type(input).__name__}")
    if gradient_distribute is not None:
        as_sbp_hint(gradient_distribute, input.shape, "parallel_cast's gradient_distribute", user_location())
    handle = input.with_distribute(distribute) if distribute is not None else input
    return add_op("identity", {"in": [handle]}, name=name)[0]
