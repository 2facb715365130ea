"""``flow.global_function``: registers a job function with the session; tracing turns it into a Job."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import FlowlabError, SessionStateError, hide_own_frames
from ..ir import Job, ParallelConf
from ..ir.dtype import float32
from ..typing import MirroredTensorDef
from .blob import LazyBlob
from .builder import JobBuilder, builder_stack, building
from .function_config import FunctionConfig
from .location import describe
from .scope import LogicalView, PlacementScope, default_parallel_conf
from .signature import JobSignature, flatten_returned, parse_signature

JOB_TYPES = ("predict", "train")


@dataclass
class FunctionDesc:
    """OneFlow's FunctionDesc: the job function, its config and its checked signature."""

    job_func: Callable[..., Any]
    job_type: str
    config: FunctionConfig
    signature: JobSignature
    # Filled by tracing: how to rebuild the returned structure from the pulled blobs.
    return_structure: Any = None
    return_op_names: tuple[str, ...] = ()
    input_op_names: tuple[str, ...] = ()
    watches: list[tuple[str, str, Any]] = field(default_factory=list)
    # Filled by the session on the first call: the jobs one call launches (push jobs, the job, pull jobs).
    launch_names: tuple[str, ...] = ()
    # The session the decorator registered this function with, held weakly (an old handle must not keep a
    # cleared session's runtime alive); tells "replaced in this session" from "registered in a cleared one".
    session_ref: Callable[[], Any] | None = field(default=None, repr=False, compare=False)

    @property
    def device_count(self) -> int:
        """Devices of the job's default placement: how many pieces a ListNumpy argument has."""
        return _default_placement(self.config).parallel_num

    @property
    def job_name(self) -> str:
        return self.job_func.__name__

    @property
    def loc(self) -> str:
        code = self.job_func.__code__
        return describe(code.co_filename, code.co_firstlineno)

    def replaced_in(self, session: Any, current: FunctionDesc | None) -> SessionStateError | None:
        """The error for calling this function after a newer one of the same name replaced it in ``session``
        (the session it was registered with), or None when that is not what happened."""
        if self.session_ref is None or self.session_ref() is not session or current is None or current is self:
            return None
        return SessionStateError(
            f"job function {self.job_name!r} defined at {self.loc} was replaced in this session by the "
            f"@flow.global_function {self.job_name!r} redefined at {current.loc} (a job is named after its "
            "function, and the later definition wins); call the handle that the new definition returned"
        )


def global_function(type: str = "predict", function_config: FunctionConfig | None = None) -> Callable[..., Any]:
    """Decorate a job function: ``@flow.global_function(type="predict"|"train", function_config=cfg)``."""
    if callable(type):  # used bare, as @flow.global_function
        return _decorator("predict", None, sys._getframe(1).f_locals)(type)
    return _decorator(type, function_config, None)


def _decorator(type: str, function_config: FunctionConfig | None,
               localns: dict[str, Any] | None) -> Callable[..., Any]:
    if type not in JOB_TYPES:
        raise ValueError(f"global_function type must be one of {JOB_TYPES}; got {type!r}")
    if function_config is not None and not isinstance(function_config, FunctionConfig):
        raise TypeError(f"function_config must be a flow.FunctionConfig; got {function_config!r}")

    def decorator(job_func: Callable[..., Any]) -> Callable[..., Any]:
        from ..session import default_session  # the session sits above the front end

        if not inspect.isfunction(job_func):
            raise TypeError(f"@flow.global_function decorates a function; got {job_func!r}")
        # String annotations (from __future__ import annotations) may name locals of the defining scope.
        names = localns if localns is not None else sys._getframe(1).f_locals
        signature = parse_signature(job_func, dict(names))
        desc = FunctionDesc(job_func, type, function_config or FunctionConfig(), signature)
        session = default_session()
        desc.session_ref = weakref.ref(session)
        session.add_job(desc)

        @functools.wraps(job_func)
        def run(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # IPython leaves this wrapper out of tracebacks
            session = default_session()
            try:
                if builder_stack:  # some thread traces a job: if it is this one, this call is inside a job's body
                    _refuse_nested_call(session, desc, sys._getframe(1))
                return session.lazy_run(desc, args, kwargs)
            except FlowlabError as err:  # a user-facing error: its traceback ends at the user's line
                raise hide_own_frames(err)  # noqa: B904 (the same object: its cause and context stay as they were)

        run.__flowlab_function_desc__ = desc  # type: ignore[attr-defined]
        return run

    return decorator


def _refuse_nested_call(session: Any, desc: FunctionDesc, caller: Any) -> None:
    """Calling a job function while tracing would start the session again from inside its own start (it used to
    recurse until RecursionError). Tracing runs under the session's lock, so taking the lock here waits out
    another thread's trace; only the tracing thread itself still finds its builder."""
    with session.lock:
        if builder_stack:
            where = describe(caller.f_code.co_filename, caller.f_lineno)
            from ..errors import SessionStateError

            raise SessionStateError(
                f"job function {desc.job_name!r} was called while tracing job {builder_stack[-1].job_name!r} (at "
                f"{where}); job functions cannot be called inside another job function's body. Call them one "
                "after the other from ordinary Python code, or share the ops through a plain Python function"
            )


class InterfaceCounter:
    """Session-wide ``Input_<n>`` / ``Return_<n>`` names. Interface ops with the same name share memory across
    jobs, so a generated name skips every name a traced op already has, and remembers which job it went to, so
    that a user op asking for it later is an error (see ``JobBuilder.add_op``)."""

    def __init__(self) -> None:
        self.inputs = 0
        self.returns = 0
        self.taken: dict[str, str] = {}  # op name -> the job of the first op with it, over every traced job
        self.generated: dict[str, str] = {}  # generated interface name -> its job

    def next_name(self, prefix: str, builder: JobBuilder) -> str:
        while True:
            if prefix == "Input":
                n, self.inputs = self.inputs, self.inputs + 1
            else:
                n, self.returns = self.returns, self.returns + 1
            name = f"{prefix}_{n}"
            if name not in self.taken and not builder.has_op(name):
                return name  # the caller adds the op, then notes it in ``generated``

    def record(self, builder: JobBuilder) -> None:
        """Note the names of a traced job's ops, which later generated names must skip."""
        for op in builder.ops:
            self.taken.setdefault(op.name, builder.job_name)


def trace(desc: FunctionDesc, counter: InterfaceCounter) -> tuple[Job, JobBuilder]:
    """Run the job function once on lazy blobs and return the Job it built (before any pass)."""
    cfg = desc.config
    default_placement = _default_placement(cfg)
    job_conf = {
        "job_type": desc.job_type,
        "default_data_type": (cfg.get("default_data_type") or float32).name,
        "enable_reuse_mem": cfg.get("enable_reuse_mem"),
    }
    # OptimizerPlacementOptimizationPass (compiler/optimizer_placement.py) reads these; absent unless set
    mode = cfg.get("optimizer_placement_optimization_mode") or (
        "non_distributed" if cfg.get("enable_non_distributed_optimizer") else None)
    if mode is not None:
        job_conf["optimizer_placement_optimization_mode"] = mode
        job_conf["optimizer_placement_optimization_threshold"] = cfg.get("optimizer_placement_optimization_threshold")
    if cfg.get("indexed_slices_optimizer_conf") is not None:  # compiler/optimizer_ops.py's _indexed_slices
        job_conf["indexed_slices_optimizer_conf"] = cfg.get("indexed_slices_optimizer_conf")
    builder = JobBuilder(desc.job_name, job_conf, default_placement)
    builder.generated_names = counter.generated
    builder.default_view = _default_view(cfg)
    builder.function_desc = desc
    with building(builder):
        args: list[LazyBlob] = []
        for _param, tdef in desc.signature.params:
            op_name = counter.next_name("Input", builder)
            attrs = {"shape": tdef.shape, "dtype": tdef.dtype, "batch_axis": tdef.batch_axis}
            (blob,) = builder.add_op("input", attrs=attrs, name=op_name, scoped=False, loc=desc.loc)
            counter.generated[op_name] = desc.job_name
            builder.input_op_names.append(op_name)
            if isinstance(tdef, MirroredTensorDef):  # a ListNumpy placeholder: one piece per device
                builder.mirrored_op_names.append(op_name)
                # OneFlow's MirroredTensorDef is dynamic: each piece its own shape, up to the placeholder's
                blob.blob_desc = builder.blob_descs[blob.lbn] = dataclasses.replace(blob.blob_desc, is_dynamic=True)
            args.append(blob)
        returned = desc.job_func(*desc.signature.group_args(args))  # a Tuple parameter gets its tuple
        blobs, structure = flatten_returned(desc.job_name, desc.signature.returns, returned)
        names = []
        for blob in blobs:
            op_name = counter.next_name("Return", builder)
            placement = ParallelConf("cpu", ("0:0",)) if cfg.get("allow_cpu_return_op") else None
            builder.add_op("return", {"in": [blob]}, name=op_name, scoped=False, placement=placement, loc=desc.loc)
            # returned per device (tp.ListNumpy): a mirrored blob, or any blob of a mirrored job, whose return ops
            # OneFlow adds in the job's default view once the function has returned (CurJobAddOp)
            if blob.op_name in builder.mirrored_op_names or builder.default_view == "mirrored":
                builder.mirrored_op_names.append(op_name)
            counter.generated[op_name] = desc.job_name
            names.append(op_name)
        builder.return_op_names.extend(names)
    counter.record(builder)
    desc.return_structure = structure
    desc.return_op_names = tuple(names)
    desc.input_op_names = tuple(builder.input_op_names)
    desc.launch_names = ()  # derived from the names above, which this session may number differently
    return builder.build(), builder


def _default_view(cfg: FunctionConfig) -> str:
    view = cfg.get("default_logical_view") or cfg.get("default_distribute_strategy")
    if view is None:
        return "consistent"
    if isinstance(view, LogicalView):
        return view.name
    raise TypeError(f"default_logical_view takes flow.scope.consistent_view() or flow.scope.mirrored_view(); "
                    f"got {view!r}")


def _default_placement(cfg: FunctionConfig) -> ParallelConf:
    scope = cfg.get("default_placement_scope")
    if scope is None:
        return default_parallel_conf()
    if isinstance(scope, PlacementScope):
        return scope.parallel_conf
    raise TypeError(f"default_placement_scope must be made by flow.scope.placement(...); got {scope!r}")
