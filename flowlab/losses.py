"""``flow.losses``: OneFlow v0.3.4's ``flow.losses.add_loss``."""

from __future__ import annotations

from .errors import OpInferError
from .frontend.blob import LazyBlob
from .frontend.builder import builder_stack


def add_loss(loss: LazyBlob) -> None:
    """Mark ``loss`` as a loss of the train job being traced: backpropagation starts at it too (its gradient adds
    to the minimized loss's), as OneFlow's ``CurJobBuildAndInferCtx_AddLossLogicalBlobName``. Outside a train job
    OneFlow finds no implementation for the call and raises NotImplementedError; so does flowlab."""
    builder = builder_stack[-1] if builder_stack else None
    if builder is None or builder.job_conf.get("job_type") != "train":
        where = "outside a job function" if builder is None else f"in the predict job {builder.job_name!r}"
        raise NotImplementedError(f"flow.losses.add_loss is called {where}; it marks a loss of a train job "
                                  "(@flow.global_function(type=\"train\")) while the job is traced")
    if not isinstance(loss, LazyBlob):
        raise OpInferError(f"flow.losses.add_loss takes a blob of this job; got {type(loss).__name__}")
    builder.added_loss_lbns.append(loss.lbn)


__all__ = ["add_loss"]
