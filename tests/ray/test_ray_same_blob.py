"""One blob read as two arguments in two SBPs across two Ray machines: ``matmul(x, x, transpose_b=True)`` on an
S(0) ``x`` over ``["0:0", "1:0"]`` reads ``a`` as each machine's piece and ``b`` as the whole, boxed over the
network. Each Ray host binds the kernel's arguments by the registers the plan records (runtime/binding.py), as
the in-process runtime does (tests/frontend/test_one_blob_two_args.py)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra")
pytestmark = pytest.mark.ray


def test_x_times_x_transposed_on_two_ray_machines(two_machines):
    flow.clear_default_session()
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(two_machines)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", ["0:0", "1:0"]):
            return flow.matmul(x, x, transpose_b=True)

    x = (np.arange(18, dtype=np.float32).reshape(6, 3) - 7.0) / 10
    for k in range(2):
        xk = x + np.float32(k)
        np.testing.assert_allclose(job(xk), xk.astype(np.float64) @ xk.T.astype(np.float64), rtol=1e-5, atol=1e-6)
    assert {t.machine_id for t in flow.default_session().plan.tasks} == {0, 1}
