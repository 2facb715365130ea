"""flowlab's exceptions. Each message says what was expected, what was given, and where."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .flags import get

if TYPE_CHECKING:  # the runtime imports this module, so these names are for the type checker only
    from .ir import Plan
    from .runtime.actor import Actor


class FlowlabError(Exception):
    """Base class of flowlab's own errors."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def hide_own_frames(err: BaseException) -> BaseException:
    """``err`` with flowlab's own frames taken out of its traceback, so that a user-facing error ends at the user's
    line (the op call in the job function) and shows only the user's frames on the way there, as IPython hides
    its own (``__tracebackhide__``). ``FLOWLAB_DEBUG=1`` keeps every frame; an error with no frame of the user's
    (a bug inside flowlab) keeps them too. Chained errors (``__cause__``) keep theirs."""
    if get("debug"):
        return err
    kept, tb = [], err.__traceback__
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
            kept.append(tb)
        tb = tb.tb_next
    if not kept:
        return err
    for above, below in zip(kept, kept[1:]):
        above.tb_next = below  # writable since Python 3.7
    kept[-1].tb_next = None
    return err.with_traceback(kept[0])


class OpInferError(FlowlabError, ValueError):
    """An op was given inputs or attrs it cannot accept; raised at the user's line while tracing."""


class JobAnnotationError(FlowlabError, TypeError):
    """A job function's annotations are missing, mixed or unsupported."""


class JobArgumentError(FlowlabError, ValueError):
    """A job was called with arguments that do not match its placeholders."""


class SessionStateError(FlowlabError, RuntimeError):
    """The session is in the wrong state for the request (e.g. adding a job after it started)."""


class CompileError(FlowlabError, RuntimeError):
    """The jobs cannot be compiled into one Plan (e.g. interface blobs that disagree across jobs)."""


class KernelError(FlowlabError, RuntimeError):
    """A kernel raised while an actor acted; the call is cancelled and the session keeps the variables of the last
    completed call (docs/failure-semantics.md)."""


class AllocationError(FlowlabError, MemoryError):
    """A memory block of the Plan cannot be allocated; says which job and blob need how many bytes."""


class WatchHandlerError(FlowlabError, RuntimeError):
    """Watch handlers raised; every handler of the call got its value first, and the call's result is ``result``."""

    def __init__(self, message: str, result: object, errors: list[Exception]) -> None:
        super().__init__(message)
        self.result = result
        self.errors = errors


class PlacementError(FlowlabError, ValueError):
    """A device tag or device-id string is malformed or not supported."""


def kernel_error(plan: Plan, actor: Actor, err: Exception) -> KernelError:
    """The error for a kernel that raised while ``actor`` acted: the op, where the user created it, its job."""
    op = actor.task.exec_sequence[0]
    where = f" (created at {op.loc})" if op.loc else ""
    job = plan.job_names[actor.task.job_id]
    error = KernelError(f"the kernel of op {op.name!r} ({op.op_type}){where} in job "
                        f"{job!r} raised {type(err).__name__}: {err}")
    # Where it happened, for a caller in another process (flowlab.distributed names the machine as well).
    error.task_name, error.op_name, error.job_name = actor.task.name, op.name, job  # type: ignore[attr-defined]
    error.machine_id = actor.task.machine_id  # type: ignore[attr-defined]
    return error
