"""``flow.watch`` / ``flow.watch_diff``: a ForeignWatch op copies a blob (or its gradient) out of the runtime;
the session hands the copies to the handlers once the run has finished."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import typing as tp
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..ir import BlobDesc
from ._common import require_blob
from .registry import REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import broadcast_only

Handler = Callable[[np.ndarray], Any]


def _nothing(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {}


# the op reads the logical blob (B); ``as_list``: the handler is annotated tp.ListNumpy and gets one array per
# device, cut as the blob lies (``mirrored_parts``/``mirrored_axis``, filled in after SBP inference as a mirrored
# return's, compiler/compile.py)
register_op(OpDef("foreign_watch", ("in",), (), _nothing, {"handler_uuid": REQUIRED, "as_list": False,
                                                          "mirrored_parts": 0, "mirrored_axis": 0},
                  system=True, sbp=broadcast_only))


def wants_list(handler: Handler) -> bool:
    """Whether ``handler``'s first parameter is annotated ``tp.ListNumpy`` (OneFlow's TransformWatchedBlob reads
    that annotation: ListNumpy gives ``numpy_list()``, one array per device; Numpy or none ``numpy()``)."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: no annotations to read
        return False
    if not params:
        return False
    annotation = params[0].annotation
    if isinstance(annotation, str):  # ``from __future__ import annotations``
        try:
            annotation = typing.get_type_hints(handler).get(params[0].name, annotation)
        except Exception:  # a name the handler's module cannot resolve: not tp.ListNumpy
            return annotation.rpartition(".")[2] == "ListNumpy"
    return annotation is tp.ListNumpy


def _register(kind: str, blob: LazyBlob, handler: Handler) -> str:
    require_blob(blob, f"flow.{kind}'s blob")
    if not callable(handler):
        raise TypeError(f"flow.{kind} needs a callable handler; got {handler!r}")
    builder = current_builder()
    uuid = f"{builder.job_name}/{kind}/{len(builder.watches)}/{blob.lbn}"
    builder.watches.append((kind, blob.lbn, handler, uuid))
    return uuid


def watch(blob: LazyBlob, handler: Handler) -> None:
    """Call ``handler`` with the blob's value after each run of the job: a numpy array (the blob seen
    consistently), or, where its parameter is annotated ``tp.ListNumpy``, a list with one array per device."""
    uuid = _register("watch", blob, handler)
    builder, name = current_builder(), f"System-Watch-{blob.op_name}"
    if builder.has_op(name):  # the same blob watched again (OneFlow names each ForeignWatch_<unique id>)
        name += f"-{len(builder.watches) - 1}"
    add_op("foreign_watch", {"in": [blob]}, {"handler_uuid": uuid, "as_list": wants_list(handler)}, name=name,
           scoped=False)


def watch_diff(blob: LazyBlob, handler: Handler) -> None:
    """Call ``handler`` with the blob's gradient after each run of a train job (the gradient of the summed
    loss, as OneFlow's seed-with-ones backward gives it)."""
    uuid = _register("watch_diff", blob, handler)
    builder = current_builder()
    watch = (blob.lbn, uuid, wants_list(handler))  # a tp.ListNumpy handler gets the gradient per device
    builder.job_conf["diff_watches"] = [*builder.job_conf.get("diff_watches", []), watch]
