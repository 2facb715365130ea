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
from ..local_blob import local_blob
from ._common import require_blob
from .registry import REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import broadcast_only

Handler = Callable[[np.ndarray], Any]


def _nothing(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {}


# the op reads the logical blob (B); ``as_list``: the handler reads the blob per device and gets one array per
# device, cut as the blob lies (``mirrored_parts``/``mirrored_axis``, filled in after SBP inference as a mirrored
# return's, compiler/compile.py)
register_op(OpDef("foreign_watch", ("in",), (), _nothing, {"handler_uuid": REQUIRED, "as_list": False,
                                                          "mirrored_parts": 0, "mirrored_axis": 0},
                  system=True, sbp=broadcast_only))


_FORMS = {tp.Numpy: "numpy", tp.ListNumpy: "list_numpy", tp.ListListNumpy: "list_list_numpy"}


def handler_form(handler: Handler) -> str:
    """What ``handler`` gets, read from its first parameter's annotation as OneFlow's TransformWatchedBlob reads it:
    ``tp.Numpy`` "numpy" (the blob seen consistently), ``tp.ListNumpy`` "list_numpy" (``numpy_list()``, one array
    per device), ``tp.ListListNumpy`` "list_list_numpy" (per device its tensor list), none "blob" (the local blob
    itself, with ``.numpy()`` and ``.numpy_list()``)."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: no annotations to read
        return "blob"
    if not params or params[0].annotation is inspect.Parameter.empty:
        return "blob"
    annotation = params[0].annotation
    if isinstance(annotation, str):  # ``from __future__ import annotations``
        try:
            annotation = typing.get_type_hints(handler).get(params[0].name, annotation)
        except Exception:  # a name the handler's module cannot resolve: read the name
            return {"Numpy": "numpy", "ListNumpy": "list_numpy", "ListListNumpy": "list_list_numpy"}.get(
                annotation.rpartition(".")[2], "numpy")
    return _FORMS.get(annotation, "numpy")


class WatchHandler:
    """A watch handler with the form its annotation asks for, read once when the watch is traced."""

    __slots__ = ("handler", "form", "__qualname__")

    def __init__(self, handler: Handler) -> None:
        self.handler, self.form = handler, handler_form(handler)
        self.__qualname__ = getattr(handler, "__qualname__", repr(handler))  # what a failure names

    def __call__(self, value: Any) -> Any:
        # ``value``: the blob seen consistently, or (any other form) its pieces with ``.logical``
        if self.form == "blob":
            return self.handler(local_blob(value))
        if self.form == "list_list_numpy":
            return self.handler([[piece] for piece in value])
        return self.handler(value)


def _register(kind: str, blob: LazyBlob, handler: Handler) -> tuple[str, bool]:
    """The watch's uuid, and whether its handler reads the blob per device: tp.ListNumpy and tp.ListListNumpy
    always (a consistent blob is a list of one), an unannotated handler's local blob where the blob is mirrored
    (a consistent one is its own only piece)."""
    require_blob(blob, f"flow.{kind}'s blob")
    if not callable(handler):
        raise TypeError(f"flow.{kind} needs a callable handler; got {handler!r}")
    builder = current_builder()
    uuid = f"{builder.job_name}/{kind}/{len(builder.watches)}/{blob.lbn}"
    wrapped = WatchHandler(handler)
    builder.watches.append((kind, blob.lbn, wrapped, uuid))
    per_device = wrapped.form in ("list_numpy", "list_list_numpy") or (
        wrapped.form == "blob" and blob.op_name in builder.mirrored_op_names)
    return uuid, per_device


def watch(blob: LazyBlob, handler: Handler) -> None:
    """Call ``handler`` with the blob's value after each run of the job, as its parameter's annotation asks:
    ``tp.Numpy`` a numpy array (the blob seen consistently), ``tp.ListNumpy`` a list with one array per device,
    ``tp.ListListNumpy`` per device a list of one, none the local blob (``.numpy()``, ``.numpy_list()``)."""
    uuid, as_list = _register("watch", blob, handler)
    builder, name = current_builder(), f"System-Watch-{blob.op_name}"
    if builder.has_op(name):  # the same blob watched again (OneFlow names each ForeignWatch_<unique id>)
        name += f"-{len(builder.watches) - 1}"
    add_op("foreign_watch", {"in": [blob]}, {"handler_uuid": uuid, "as_list": as_list}, name=name,
           scoped=False)


def watch_diff(blob: LazyBlob, handler: Handler) -> None:
    """Call ``handler`` with the blob's gradient after each run of a train job (the gradient of the summed
    loss, as OneFlow's seed-with-ones backward gives it)."""
    uuid, as_list = _register("watch_diff", blob, handler)
    builder = current_builder()
    watch = (blob.lbn, uuid, as_list)  # a tp.ListNumpy (or unannotated) handler gets the gradient per device
    builder.job_conf["diff_watches"] = [*builder.job_conf.get("diff_watches", []), watch]
