"""flow.debug shows a dynamic blob (runtime/dynamic.py) as its current piece, with its static shape beside it."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp


def test_the_debugger_shows_a_dynamic_blobs_current_shape_beside_its_static_one():
    flow.clear_default_session()
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def job(a: tp.ListNumpy.Placeholder((5, 2))) -> tp.ListNumpy:
        return flow.math.abs(a)

    x = -np.arange(3, dtype=np.float32).reshape(3, 1) - 1  # [[-1], [-2], [-3]]
    dbg = flow.debug(job, [x])
    dbg.run_to("job/Return_0")
    stats = dbg.blob("abs_0/y_0")
    assert stats.shape == (3, 1) and stats.static_shape == (5, 2)
    assert (stats.min, stats.max, stats.mean) == (1.0, 3.0, 2.0)  # of the piece, not the static buffer's zeros
    assert str(stats).startswith("abs_0/y_0 (r") and "f32[3, 1] (dynamic: static [5, 2])" in str(stats)
    assert stats.to_dict()["static_shape"] == [5, 2] and stats.to_dict()["shape"] == [3, 1]
    np.testing.assert_array_equal(dbg.value("abs_0/y_0"), -x)
    still = dbg.blob("job/Input_0")
    assert still.shape == (3, 1) and still.static_shape == (5, 2)
