"""Every IR object is immutable all the way down: a stage hands the next a value nobody can change under it.

The test walks every object reachable from a compiled training session (traced jobs, pass records, the JobSet,
the Plan) and tries each kind of mutation on each field of each object. It also checks that it met every IR
class, so an IR class added later is covered or the test says which one it did not see.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab import ir
from flowlab.compiler.passes import PassRecord
from flowlab.ir import FrozenDict, from_json, to_json


def _ir_dataclasses() -> set[type]:
    """Every dataclass defined in any module of flowlab.ir (a new module is included without editing this)."""
    classes = set()
    for info in pkgutil.iter_modules(ir.__path__):
        module = importlib.import_module(f"{ir.__name__}.{info.name}")
        classes |= {c for _, c in inspect.getmembers(module, inspect.isclass)
                    if dataclasses.is_dataclass(c) and c.__module__ == module.__name__}
    return classes | {PassRecord}


@pytest.fixture
def session():
    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3, 2), initializer=flow.random_normal_initializer(seed=1))
        y = flow.matmul(x, w)
        flow.watch_diff(y, lambda d: None)
        loss = flow.math.reduce_mean(y * y)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    for _ in range(3):  # a later call replays a captured one: its Schedule IR exists from then on
        train_job(np.ones((4, 3), np.float32))
    session = flow.default_session()
    session.test_job = train_job
    return session


def _reachable(roots: list[Any]) -> list[Any]:
    seen: dict[int, Any] = {}
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (str, int, float, bool, type(None), ir.DType)):
            continue
        seen[id(obj)] = obj
        if dataclasses.is_dataclass(obj):
            stack.extend(getattr(obj, f.name) for f in dataclasses.fields(obj))
        elif isinstance(obj, Mapping):
            stack.extend(obj.values())
        elif isinstance(obj, (tuple, list)):
            stack.extend(obj)
    return list(seen.values())


def _assert_immutable(obj: Any, where: str) -> None:
    if isinstance(obj, (list, dict, set, bytearray, np.ndarray)):
        raise AssertionError(f"{where} is a mutable {type(obj).__name__}")
    if isinstance(obj, Mapping):
        assert isinstance(obj, FrozenDict), f"{where} is a {type(obj).__name__}, not a FrozenDict"
        key = next(iter(obj), "k")
        with pytest.raises(TypeError):
            obj[key] = None  # type: ignore[index]
        with pytest.raises(TypeError):
            del obj[key]  # type: ignore[attr-defined]
        for method in ("update", "pop", "popitem", "setdefault", "clear"):
            assert not hasattr(obj, method), f"{where} has .{method}()"
        with pytest.raises(AttributeError):
            obj._data = {}  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(obj, f.name, getattr(obj, f.name))
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(obj, f.name)


def test_every_ir_object_of_a_compiled_session_is_immutable(session):
    schedule = session.schedule_of(session.test_job)
    assert schedule is not None
    roots = [*session.traced_jobs.values(), *session.passes, session.job_set, session.plan, schedule]
    objects = _reachable(roots)
    for obj in objects:
        _assert_immutable(obj, f"{type(obj).__name__} {str(obj)[:80]!r}")
    met = {type(o) for o in objects if dataclasses.is_dataclass(o)} | {ir.DType}
    assert _ir_dataclasses() <= met, f"IR classes not met: {_ir_dataclasses() - met}"
    # the walk did look inside: op attrs with nested dicts and lists were frozen too
    variable = session.job_set.job("train_job").op("w")
    assert isinstance(variable.attrs["initializer"], FrozenDict)
    assert isinstance(session.job_set.job("train_job").job_conf["train_conf"], FrozenDict)


def test_frozen_mappings_compare_hash_and_print_like_dicts():
    fd = FrozenDict({"a": 1, "b": (2, 3)})
    assert fd == {"a": 1, "b": (2, 3)} and {"a": 1, "b": (2, 3)} == fd
    assert hash(fd) == hash(FrozenDict({"b": (2, 3), "a": 1}))
    assert repr(fd) == "{'a': 1, 'b': (2, 3)}"
    assert fd | {"a": 5} == {"a": 5, "b": (2, 3)} and fd["a"] == 1  # a new mapping; the old one is unchanged
    assert isinstance(fd | {"c": 0}, FrozenDict)


def test_stages_build_new_objects_instead_of_changing_old_ones(session):
    """Each pass record's ``before`` is exactly the job the pass was handed, still equal to its own print."""
    for record in session.passes:
        assert from_json(to_json(record.before)) == record.before
    op = session.job_set.job("train_job").op("w")
    changed = op.replace(attrs=op.attrs | {"trainable": False})
    assert op.attrs["trainable"] is True and changed.attrs["trainable"] is False


def test_ir_objects_with_frozen_fields_hash():
    """Frozen all the way down makes an OpConf usable as a dict key or set member (a plain dict field was not)."""
    op = ir.OpConf("a", "relu", {"x": ["b/out"]}, {"y": ["a/y"]}, {"pads": [1, 2], "cfg": {"k": [1]}})
    assert hash(op) == hash(ir.OpConf("a", "relu", {"x": ("b/out",)}, {"y": ("a/y",)},
                                      {"pads": (1, 2), "cfg": {"k": (1,)}}))
    assert op in {op}
