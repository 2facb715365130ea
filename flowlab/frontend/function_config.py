"""FunctionConfig: OneFlow's job config as a declared table of typed fields with callable setters.

``config.default_data_type(flow.float)`` and ``config.train.primary_lr(0.1)`` work as in OneFlow. Each field
says whether flowlab acts on it; a field it accepts but ignores warns once. An unknown name is an
AttributeError that suggests the closest field names.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..ir.dtype import DType


@dataclass(frozen=True)
class ConfigField:
    name: str  # dotted: "train.primary_lr"
    types: tuple[type, ...]
    default: Any
    effect: str | None  # what setting it changes; None: accepted for compatibility, warns once, changes nothing
    check: Callable[[Any], str | None] | None = None  # a value's type is right but the value is not: why

    @property
    def acted_on(self) -> bool:
        return self.effect is not None


def _f(name: str, types: type | tuple[type, ...], default: Any, effect: str | None = None,
       check: Callable[[Any], str | None] | None = None) -> ConfigField:
    return ConfigField(name, types if isinstance(types, tuple) else (types,), default, effect, check)


OPTIMIZER_PLACEMENT_MODES = ("distributed_split", "non_distributed")


def _placement_mode(value: str) -> str | None:
    # OneFlow asserts the mode (function_util.py); flowlab says what it takes
    if value not in OPTIMIZER_PLACEMENT_MODES:
        return f"takes {' or '.join(map(repr, OPTIMIZER_PLACEMENT_MODES))}; got {value!r}"
    return None


def _non_negative(value: int) -> str | None:
    return None if value >= 0 else f"takes an element count >= 0; got {value!r}"


def _indexed_slices_conf(value: dict) -> str | None:
    # OneFlow's IndexedSlicesOptimizerConf: {"enable": bool (default True), "include_op_names": {"op_name": [...]}}
    names = value.get("include_op_names")
    if set(value) - {"enable", "include_op_names"} or not isinstance(names, dict) or set(names) != {"op_name"} \
            or not all(isinstance(n, str) for n in names["op_name"]):
        return f"takes dict(include_op_names=dict(op_name=[variable names]), enable=True); got {value!r}"
    return None


_NUM = (int, float)
# Each field flowlab acts on says what it changes (tests/frontend/test_config_fields.py checks each claim); the rest are
# OneFlow's fields that flowlab accepts so OneFlow programs run unchanged, and warn once that they do nothing.
FIELDS: dict[str, ConfigField] = {
    f.name: f
    for f in (
        _f("default_data_type", DType, None, "the dtype of get_variable and constant when none is given"),
        _f("default_placement_scope", object, None, "the placement of ops outside any flow.scope.placement"),
        _f("default_logical_view", object, None, "the job's view: flow.scope.mirrored_view() marks its ops mirrored"),
        _f("default_distribute_strategy", object, None, "OneFlow's older name of default_logical_view"),
        _f("allow_cpu_return_op", bool, True, "return ops on cpu 0:0 whatever the default placement"),
        _f("enable_reuse_mem", bool, True, "registers of a job's compute chain share reused memory blocks"),
        _f("enable_inplace", bool, True),
        _f("concurrency_width", int, 128),
        _f("default_initializer_conf", dict, None),
        _f("exp_run_conf", dict, None),
        _f("use_memory_allocation_algorithm_v2", bool, True),
        _f("enable_cudnn", bool, True),
        _f("cudnn_buf_limit_mbyte", int, 1024),
        _f("cudnn_conv_force_fwd_algo", int, -1),
        _f("cudnn_conv_force_bwd_data_algo", int, -1),
        _f("cudnn_conv_force_bwd_filter_algo", int, -1),
        _f("cudnn_conv_heuristic_search_algo", bool, True),
        _f("cudnn_conv_use_deterministic_algo_only", bool, False),
        _f("cudnn_conv_enable_pseudo_half", bool, False),
        _f("enable_cudnn_fused_normalization_add_relu", bool, False),
        _f("enable_fuse_add_to_output", bool, False),
        _f("enable_fuse_cast_scale", bool, False),
        _f("enable_fuse_model_update_ops", bool, False),
        _f("enable_gradients_stats_aggregation", bool, True),
        _f("enable_keep_header_only", bool, False),
        _f("do_parallel_cast_before_widening_type_cast", bool, True),
        _f("prune_parallel_cast_ops", bool, True),
        _f("prune_cast_to_static_shape_ops", bool, True),
        _f("enable_float_compute_for_half_gemm", bool, False),
        _f("enable_auto_mixed_precision", bool, False),
        _f("enable_quantization_aware_training", bool, False),
        _f("enable_non_distributed_optimizer", bool, False,
           "True sets optimizer_placement_optimization_mode to 'non_distributed' (OneFlow's older switch)"),
        _f("optimizer_placement_optimization_mode", str, None,
           "a train job's data-parallel variables and their updates: split over the devices or one device each",
           _placement_mode),
        _f("optimizer_placement_optimization_threshold", int, 1024,
           "the least element count per device of a variable the placement optimization moves", _non_negative),
        _f("indexed_slices_optimizer_conf", dict, None,
           "Adam/LazyAdam update the variables named in include_op_names.op_name on their gathered rows only",
           _indexed_slices_conf),
        _f("use_xla_jit", bool, False),
        _f("use_tensorrt", bool, False),
        _f("train.primary_lr", _NUM, None),
        _f("train.secondary_lr", _NUM, None),
        _f("train.loss_scale_factor", _NUM, None),
        _f("train.model_update_conf", dict, None),
        _f("train.num_gradient_accumulation_steps", int, 1),
    )
}
_WHY_NOT = {  # what to do instead, where flowlab offers it
    "train.primary_lr": "the learning rate comes from flow.optimizer.<Name>(lr_scheduler).minimize(loss)",
    "train.secondary_lr": "the learning rate comes from flow.optimizer.<Name>(lr_scheduler).minimize(loss)",
    "train.model_update_conf": "the update rule comes from flow.optimizer.<Name>(lr_scheduler).minimize(loss)",
}
_ALIASES = {"enable_reused_mem": "enable_reuse_mem", "enable_qat": "enable_quantization_aware_training",
            # OneFlow registers these under both names (function_util.py)
            "train.optimizer_placement_optimization_mode": "optimizer_placement_optimization_mode",
            "train.optimizer_placement_optimization_threshold": "optimizer_placement_optimization_threshold"}
_warned: set[str] = set()


class _Setter:
    def __init__(self, config: FunctionConfig, field: ConfigField) -> None:
        self._config, self._field = config, field

    def __call__(self, value: Any = True) -> None:
        field = self._field
        if field.types != (object,) and not isinstance(value, field.types):
            wanted = " or ".join(t.__name__ for t in field.types)
            raise TypeError(f"FunctionConfig.{field.name} takes a {wanted}; got {value!r}")
        if isinstance(value, bool) and bool not in field.types and field.types != (object,):
            raise TypeError(f"FunctionConfig.{field.name} takes a number; got {value!r}")
        problem = field.check(value) if field.check is not None else None
        if problem is not None:
            raise ValueError(f"FunctionConfig.{field.name} {problem}")
        if not field.acted_on and field.name not in _warned:
            _warned.add(field.name)
            why = f" ({_WHY_NOT[field.name]})" if field.name in _WHY_NOT else ""
            warnings.warn(f"flowlab accepts FunctionConfig.{field.name} but does not act on it: setting it changes "
                          f"nothing{why}", stacklevel=2)
        self._config._values[field.name] = value

    def __repr__(self) -> str:
        return f"<FunctionConfig setter {self._field.name}>"


class _Group:
    def __init__(self, config: FunctionConfig, prefix: str) -> None:
        self._config, self._prefix = config, prefix

    def __getattr__(self, name: str) -> _Setter | _Group:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._config._lookup(f"{self._prefix}.{name}")


class FunctionConfig:
    """The config of one job function. Read values with ``config.get("train.primary_lr")``."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def __getattr__(self, name: str) -> _Setter | _Group:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._lookup(name)

    def _lookup(self, dotted: str) -> _Setter | _Group:
        dotted = _ALIASES.get(dotted, dotted)
        if dotted in FIELDS:
            return _Setter(self, FIELDS[dotted])
        if any(name.startswith(dotted + ".") for name in FIELDS):
            return _Group(self, dotted)
        close = difflib.get_close_matches(dotted, [*FIELDS, *_ALIASES], n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise AttributeError(f"FunctionConfig has no field {dotted!r}{hint}")

    def get(self, dotted: str) -> Any:
        dotted = _ALIASES.get(dotted, dotted)
        if dotted not in FIELDS:
            raise KeyError(f"FunctionConfig has no field {dotted!r}")
        return self._values.get(dotted, FIELDS[dotted].default)

    @property
    def values(self) -> dict[str, Any]:
        """The fields that were set, by dotted name."""
        return dict(self._values)

    @property
    def function_desc(self) -> FunctionDescView:
        """OneFlow's ``func_config.function_desc``: the config read back, ``function_desc.enable_inplace``."""
        return FunctionDescView(self)

    def __repr__(self) -> str:
        return f"FunctionConfig({self._values})"


class FunctionDescView:
    """OneFlow's FunctionDesc as flowlab's config reads it back (``flow.current_global_function_desc()``,
    ``FunctionConfig.function_desc``): each field by name (its value, or its default), ``HasAttr(name)`` (set
    explicitly), ``IsTrainable()`` (a train job), and ``job_func`` where a job function is being traced."""

    def __init__(self, config: FunctionConfig, job_type: str = "predict", job_func: Any = None) -> None:
        self._config, self._job_type, self.job_func = config, job_type, job_func

    def IsTrainable(self) -> bool:
        return self._job_type == "train"

    def HasAttr(self, attr_name: str) -> bool:
        return _ALIASES.get(attr_name, attr_name) in self._config._values

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        found = self._config._lookup(name)  # an unknown name: AttributeError with the closest field names
        if isinstance(found, _Group):
            return _GroupView(self._config, name)
        return self._config.get(name)

    def __repr__(self) -> str:
        return f"FunctionDesc({self._job_type}, {self._config._values})"


class _GroupView:
    def __init__(self, config: FunctionConfig, prefix: str) -> None:
        self._config, self._prefix = config, prefix

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return FunctionDescView(self._config).__getattr__(f"{self._prefix}.{name}")


def function_config() -> FunctionConfig:
    return FunctionConfig()
