"""``flow.watch`` / ``flow.watch_diff``: a ForeignWatch op copies a blob (or its gradient) out of the runtime;
the session hands the copies to the handlers once the run has finished."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..ir import BlobDesc
from ._common import require_blob
from .registry import REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import broadcast_only

Handler = Callable[[np.ndarray], Any]


def _nothing(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {}


register_op(OpDef("foreign_watch", ("in",), (), _nothing, {"handler_uuid": REQUIRED}, system=True,
                  sbp=broadcast_only))  # the handler sees the logical blob


def _register(kind: str, blob: LazyBlob, handler: Handler) -> str:
    require_blob(blob, f"flow.{kind}'s blob")
    if not callable(handler):
        raise TypeError(f"flow.{kind} needs a callable handler; got {handler!r}")
    builder = current_builder()
    uuid = f"{builder.job_name}/{kind}/{len(builder.watches)}/{blob.lbn}"
    builder.watches.append((kind, blob.lbn, handler, uuid))
    return uuid


def watch(blob: LazyBlob, handler: Handler) -> None:
    """Call ``handler(numpy array)`` with the blob's value after each run of the job."""
    uuid = _register("watch", blob, handler)
    add_op("foreign_watch", {"in": [blob]}, {"handler_uuid": uuid}, name=f"System-Watch-{blob.op_name}",
           scoped=False)


def watch_diff(blob: LazyBlob, handler: Handler) -> None:
    """Call ``handler`` with the blob's gradient after each run of a train job (the gradient of the summed
    loss, as OneFlow's seed-with-ones backward gives it)."""
    uuid = _register("watch_diff", blob, handler)
    builder = current_builder()
    builder.job_conf["diff_watches"] = [*builder.job_conf.get("diff_watches", []), (blob.lbn, uuid)]
