"""``flow.current_scope()`` and ``flow.current_global_function_desc()``: what OneFlow's op functions ask of the
scope they are called in (``scope_util.py``, ``scope_symbol.py``, ``function_desc.py``), as plain read-only values.

OneFlow's scope is a symbol in its VM with a ``ScopeProto``; flowlab's scopes are explicit stacks
(``frontend/scope.py``), so the scope is read from them: the placement, the logical view and the name scopes in
force, over the defaults of the job being traced.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SessionStateError
from ..ir import ParallelConf
from . import builder as _builder
from .function_config import FunctionConfig, FunctionDescView
from .scope import current_placement, current_view, name_scope_stack


@dataclass(frozen=True)
class ParallelDescSymbol:
    """OneFlow's ParallelDesc symbol: where the scope's ops run."""

    parallel_conf: ParallelConf

    @property
    def device_tag(self) -> str:
        return self.parallel_conf.device_tag

    @property
    def parallel_num(self) -> int:
        return self.parallel_conf.parallel_num

    @property
    def machine_id2device_id_list(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for machine, device in self.parallel_conf.devices:
            out.setdefault(machine, []).append(device)
        return out


@dataclass(frozen=True)
class ScopeSymbol:
    """OneFlow's Scope symbol as its op functions read it: ``device_parallel_desc_symbol`` (device tag, device
    count), whether the view is mirrored, and the name-scope prefixes."""

    device_parallel_desc_symbol: ParallelDescSymbol
    is_mirrored: bool
    scope_op_name_prefixes: tuple[str, ...]
    job_name: str | None  # the job being traced, or None outside one


def current_scope() -> ScopeSymbol:
    """The scope in force here: inside a job function, the placement and view of the innermost ``flow.scope``
    over the job's defaults (FunctionConfig's default_placement_scope / default_logical_view); outside one, those
    of the process (every device of every machine, the consistent view)."""
    builder = _builder.builder_stack[-1] if _builder.builder_stack else None
    placement = current_placement(builder.default_placement if builder is not None else None)
    view = current_view(builder.default_view if builder is not None else "consistent")
    return ScopeSymbol(ParallelDescSymbol(placement), view == "mirrored", tuple(name_scope_stack),
                       builder.job_name if builder is not None else None)


def current_global_function_desc() -> FunctionDescView:
    """The function desc of the job function being traced: ``IsTrainable()``, and its config fields by name."""
    builder = _builder.builder_stack[-1] if _builder.builder_stack else None
    desc = builder.function_desc if builder is not None else None
    if desc is None:
        raise SessionStateError("flow.current_global_function_desc() reads the job function being traced; call it "
                                "inside a @flow.global_function's body")
    config = desc.config if isinstance(desc.config, FunctionConfig) else FunctionConfig()
    return FunctionDescView(config, desc.job_type, desc.job_func)


__all__ = ["ParallelDescSymbol", "ScopeSymbol", "current_global_function_desc", "current_scope"]
