"""A cleared session starts from the default config (OneFlow keeps ``flow.config`` in the session's ConfigProto,
which a new Session builds afresh); ``flow.env`` settings belong to the process and stay (issue 25)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import PlacementError
from flowlab.frontend import scope


def _placement_free_job() -> flow.Session:
    @flow.global_function()
    def double(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return x * 2.0

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(double(x), x * 2)
    return flow.default_session()


def _parallel_nums(session: flow.Session, op_type: str) -> set[int]:
    """How many devices the tasks running ops of this type are spread over."""
    return {t.parallel_num for t in session.plan.tasks if op_type in t.op_types}


def test_cpu_device_num_does_not_outlive_the_session():
    flow.config.cpu_device_num(2)
    flow.clear_default_session()
    assert scope.ENV.cpu_device_num == 1
    session = _placement_free_job()
    ops = {t for task in session.plan.tasks for t in task.op_types}
    assert "scalar_mul" in ops, ops
    assert _parallel_nums(session, "scalar_mul") == {1}
    with pytest.raises(PlacementError, match="cpu_device_num is 1"):
        with flow.scope.placement("cpu", "0:0-1"):
            pass


def test_gpu_device_num_and_debug_mode_reset_env_stays():
    flow.env.machine(["127.0.0.1"])
    flow.config.enable_debug_mode(True)
    with pytest.warns(UserWarning) if not scope.gpu_available() else _nothing():
        flow.config.gpu_device_num(2)
    flow.clear_default_session()
    assert (scope.ENV.gpu_device_num, scope.ENV.debug_mode) == (0, False)
    assert scope.ENV.machines == ("127.0.0.1",)  # flow.env is the process's, as OneFlow's env_proto


def test_config_set_after_clearing_applies():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    assert scope.ENV.cpu_device_num == 2
    assert scope.default_parallel_conf().device_names == ("0:0-1",)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
