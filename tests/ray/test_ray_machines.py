"""OneFlow's programs on two Ray machines (``["0:0", "1:0"]``) give the one-device results; the traffic between
machines is visible in the Plan and counted by the runtime."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow

from .programs import mlp_train, one_device_reference, run

ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra")
pytestmark = pytest.mark.ray


def assert_same(got, want) -> None:
    (losses, variables), (ref_losses, ref_variables) = got, want
    for step, (a, b) in enumerate(zip(losses, ref_losses, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"loss of step {step}")
    assert sorted(variables) == sorted(ref_variables)
    for name in variables:
        np.testing.assert_allclose(variables[name], ref_variables[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_data_parallel_mlp_on_two_ray_machines_gives_the_one_device_results(two_machines):
    want = one_device_reference()
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(two_machines)
    got = run(mlp_train(["0:0", "1:0"]))
    session = flow.default_session()
    from flowlab.distributed import RayRuntime

    assert isinstance(session.runtime, RayRuntime)
    plan = session.plan
    assert {t.machine_id for t in plan.tasks} == {0, 1}
    comm = [t for t in plan.tasks if t.task_type == "CopyCommNet"]
    assert comm and {t.machine_id for t in comm} == {0, 1}  # gradients go both ways
    counters = session.runtime.counters()
    assert counters[0]["messages"] > 0 and counters[1]["messages"] > 0
    assert_same(got, want)


def test_mixed_parallel_mlp_on_two_ray_machines_gives_the_one_device_results(two_machines):
    """The docs' mixed_parallel_mlp.py: dense2's weight split over the machines (model_distribute=split(0)), so
    half of it lives only on machine 1; get_all_variables gathers it from there."""
    want = one_device_reference(flow.distribute.split(0))
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(two_machines)
    got = run(mlp_train(["0:0", "1:0"], flow.distribute.split(0)))
    assert_same(got, want)
    value = np.arange(np.prod(want[1]["dense2-weight"].shape), dtype=np.float32).reshape(want[1]["dense2-weight"].shape)
    flow.load_variables({"dense2-weight": value})  # half of it goes to machine 1
    np.testing.assert_array_equal(flow.get_all_variables()["dense2-weight"], value)
