"""Every config field either acts or warns: FunctionConfig's declared fields and the ``flow.config`` setters.

A field flowlab acts on is listed in ACTS with a check that sets it and observes the change against the default;
every other field must warn once when set, and setting it must leave the compiled JobSet, Plan and the result
exactly as they are without it. The lists are compared with the declarations, so a new field is one or the other.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab import config as flow_config
from flowlab.errors import PlacementError
from flowlab.frontend import function_config
from flowlab.frontend import scope as scope_module
from flowlab.frontend.function_config import FIELDS, ConfigField
from tests.helpers.lazy_adam import check_indexed_slices_optimizer_conf

X = np.arange(6, dtype=np.float32)


def run(config: flow.FunctionConfig | None = None, setup: Any = None) -> tuple[np.ndarray, Any]:
    """Trace, compile and run a small job (a chain of ops, a variable and a constant) under ``config``, in a fresh
    session (which starts from the default flow.config) after ``setup()``."""
    flow.clear_default_session()
    if setup is not None:
        setup()

    @flow.global_function(function_config=config)
    def cfg_Job(x: tp.Numpy.Placeholder((6,))) -> tp.Numpy:
        v = flow.get_variable("v", shape=(6,), initializer=flow.constant_initializer(0.5))
        c = flow.constant(2.0, shape=(6,))
        return flow.math.relu(flow.cast(v * c, flow.float32) * x + 1.0) * 3.0

    result = cfg_Job(X)
    return result, flow.default_session()


def config_with(**fields: Any) -> flow.FunctionConfig:
    cfg = flow.FunctionConfig()
    for name, value in fields.items():
        cfg._lookup(name)(value)
    return cfg


def op_placement(session: Any, op_type: str) -> str:
    job = session.job_set.job("cfg_Job")
    return str(next(op for op in job.ops if op.op_type == op_type).parallel_conf)


def check_default_data_type() -> None:
    _, default = run()
    result, session = run(config_with(default_data_type=flow.float64))
    descs = session.job_set.job("cfg_Job").blob_descs
    assert default.job_set.job("cfg_Job").blob_descs["v/out"].dtype is flow.float32
    assert descs["v/out"].dtype is flow.float64 and descs["constant_0/out_0"].dtype is flow.float64
    np.testing.assert_allclose(result, np.maximum(X + 1.0, 0) * 3.0)


def check_default_placement_scope() -> None:
    _, default = run()  # one cpu device: OneFlow's default placement is "0:0" (with two it is "0:0-1")
    flow.config.cpu_device_num(2)  # for the placement below; run() clears the session, so set it there too
    _, session = run(config_with(default_placement_scope=flow.scope.placement("cpu", "0:1")),
                     setup=lambda: flow.config.cpu_device_num(2))
    assert op_placement(default, "relu") == "cpu:0:0" and op_placement(session, "relu") == "cpu:0:1"


def check_allow_cpu_return_op() -> None:
    flow.config.cpu_device_num(2)  # for the placement below; run() clears the session, so set it there too

    def two() -> None:
        flow.config.cpu_device_num(2)

    placed = flow.scope.placement("cpu", "0:1")
    _, default = run(config_with(default_placement_scope=placed), setup=two)
    _, session = run(config_with(default_placement_scope=placed, allow_cpu_return_op=False), setup=two)
    assert op_placement(default, "return") == "cpu:0:0" and op_placement(session, "return") == "cpu:0:1"


def check_enable_reuse_mem() -> None:
    _, default = run()
    result, session = run(config_with(enable_reuse_mem=False))
    assert any(b.enable_reuse_mem for b in default.plan.mem_blocks)
    assert not any(b.enable_reuse_mem for b in session.plan.mem_blocks)
    np.testing.assert_allclose(result, np.maximum(X + 1.0, 0) * 3.0)


def check_default_logical_view() -> None:
    """On one device the mirrored view computes the same; the job records which ops it made mirrored."""
    for name, view in (("default_logical_view", None), ("default_logical_view", flow.scope.mirrored_view()),
                       ("default_distribute_strategy", flow.scope.mirrored_view())):
        result, session = run(config_with(**{name: view}) if view is not None else None)
        mirrored = session.job_set.job("cfg_Job").mirrored_op_names
        assert ("relu_0" in mirrored) == (view is not None) and "v" not in mirrored, (name, mirrored)
        np.testing.assert_allclose(result, np.maximum(X + 1.0, 0) * 3.0)


def train_variable(**fields: Any) -> Any:
    """A train job on 2 devices with a (4, 6) weight under ``fields``: the weight variable's op after the passes."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train", function_config=config_with(**fields))
    def opt_Job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            w = flow.get_variable("w", shape=(4, 6), initializer=flow.constant_initializer(0.5))
            loss = flow.math.reduce_sum(x * w, axis=[1])
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    opt_Job(np.ones((4, 6), np.float32))
    job = flow.default_session().job_set.job("opt_Job")
    return job, job.op("w")


def check_optimizer_placement_mode() -> None:
    job, w = train_variable()
    assert str(job.sbp_signatures["w"]["out"]) == "B"
    job, w = train_variable(optimizer_placement_optimization_mode="distributed_split",
                            optimizer_placement_optimization_threshold=1)
    assert str(job.sbp_signatures["w"]["out"]) == "S(0)"


def check_optimizer_placement_threshold() -> None:  # 24 elements: moved at threshold 12, not at 13 (x 2 devices)
    for threshold, sbp in ((12, "S(0)"), (13, "B")):
        job, _ = train_variable(optimizer_placement_optimization_mode="distributed_split",
                                optimizer_placement_optimization_threshold=threshold)
        assert str(job.sbp_signatures["w"]["out"]) == sbp, threshold


def check_enable_non_distributed_optimizer() -> None:
    _, w = train_variable()
    assert str(w.parallel_conf) == "cpu:0:0-1"
    _, w = train_variable(enable_non_distributed_optimizer=True, optimizer_placement_optimization_threshold=1)
    assert str(w.parallel_conf) == "cpu:0:0"


ACTS: dict[str, Callable[[], None]] = {
    "optimizer_placement_optimization_mode": check_optimizer_placement_mode,
    "optimizer_placement_optimization_threshold": check_optimizer_placement_threshold,
    "enable_non_distributed_optimizer": check_enable_non_distributed_optimizer,
    "default_logical_view": check_default_logical_view,
    "default_distribute_strategy": check_default_logical_view,
    "default_data_type": check_default_data_type,
    "default_placement_scope": check_default_placement_scope,
    "allow_cpu_return_op": check_allow_cpu_return_op,
    "enable_reuse_mem": check_enable_reuse_mem,
    "indexed_slices_optimizer_conf": check_indexed_slices_optimizer_conf,
}


def sample_value(field: ConfigField) -> Any:
    """A value of the field's type that differs from its default."""
    for kind, value in ((bool, not field.default), (int, 7), (float, 0.25), (str, "x"), (dict, {"a": 1})):
        if kind in field.types:
            return value
    return object() if field.types == (object,) else field.types[0]()


def test_the_fields_that_act_are_exactly_those_declared_to_act():
    assert {name for name, f in FIELDS.items() if f.acted_on} == set(ACTS)


@pytest.mark.parametrize("name", sorted(ACTS))
def test_a_field_that_acts_changes_what_it_says(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a field that acts does not also say it does nothing
        ACTS[name]()


def test_every_other_field_warns_once_and_changes_nothing():
    baseline, base_session = run()
    base_text = (str(base_session.job_set), str(base_session.plan))
    ignored = sorted(name for name, f in FIELDS.items() if not f.acted_on)
    assert len(ignored) > 30  # the walk is over the real table
    for name in ignored:
        function_config._warned.discard(name)
        cfg = flow.FunctionConfig()
        setter = cfg._lookup(name)
        with pytest.warns(UserWarning, match=rf"accepts FunctionConfig\.{name} but does not act on it"):
            setter(sample_value(FIELDS[name]))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            setter(sample_value(FIELDS[name]))  # once
        result, session = run(cfg)
        assert (str(session.job_set), str(session.plan)) == base_text, name
        np.testing.assert_array_equal(result, baseline)


def test_the_learning_rate_fields_say_where_the_learning_rate_comes_from():
    function_config._warned.discard("train.primary_lr")
    with pytest.warns(UserWarning, match=r"comes from flow\.optimizer"):
        flow.FunctionConfig().train.primary_lr(0.1)


# -- flow.config ---------------------------------------------------------------------------------------------------
def check_cpu_device_num() -> None:
    with pytest.raises(PlacementError, match="cpu_device_num is 1"):
        flow.scope.placement("cpu", "0:1")
    flow.config.cpu_device_num(2)
    assert str(flow.scope.placement("cpu", "0:1").parallel_conf) == "cpu:0:1"
    from flowlab.frontend.scope import default_parallel_conf

    assert str(default_parallel_conf()) == "cpu:0:0-1"  # OneFlow's default placement: every device
    flow.config.cpu_device_num(1)


def check_enable_debug_mode(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWLAB_DEBUG_MODE", raising=False)
    run()
    assert not (tmp_path / "log").exists()
    run(setup=lambda: flow.config.enable_debug_mode(True))
    assert len(list((tmp_path / "log").glob("*/job_set.txt"))) == 1


ENV_ACTS = {"cpu_device_num": check_cpu_device_num, "enable_debug_mode": check_enable_debug_mode}
ENV_IGNORED = {"gpu_device_num": 2}
ENV_READERS = {"value", "legacy_model_io_enabled"}  # read settings back; flow_config.SETTINGS' setters, each
# checked to warn in tests/frontend/test_oneflow_config_compat.py, are declared data rather than module functions


def test_every_flow_config_setter_acts_or_warns(tmp_path, monkeypatch):
    monkeypatch.setattr(scope_module, "_cuda_probe", [False])  # gpu_device_num acts only where CUDA is
    setters = {name for name, fn in inspect.getmembers(flow_config, inspect.isfunction)
               if fn.__module__ == flow_config.__name__ and not name.startswith("_")}
    assert setters - ENV_READERS == set(ENV_ACTS) | set(ENV_IGNORED)
    check_cpu_device_num()
    check_enable_debug_mode(tmp_path, monkeypatch)
    for name, value in ENV_IGNORED.items():
        flow_config._warned.discard(name)
        with pytest.warns(UserWarning, match=rf"accepts flow\.config\.{name} but does not act on it"):
            getattr(flow.config, name)(value)
