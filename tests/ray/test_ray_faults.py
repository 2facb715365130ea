"""Faults on several Ray machines: a kernel raising on machine 1, machine 1's actor killed mid-call, a kernel
raising on machine 0. Each surfaces in the caller within seconds as one error naming the machine (and, for a
kernel, the task, op and job); the machines are stopped, nothing hangs; the session refuses calls until cleared,
and a cleared session runs again (checked once: each start of a machine actor is a new Python process)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import flowlab as flow
from flowlab.errors import KernelError

from .programs import BATCH, data, mlp_train, one_device_reference, run

ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra")
pytestmark = pytest.mark.ray

from flowlab.distributed import MachineError  # noqa: E402  # after the skip: imports nothing of Ray itself


def start(address: str):
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(address)
    job = mlp_train(["0:0", "1:0"])
    job(*data(0))  # the machines are up and have run one step
    return job, flow.default_session().runtime


def assert_dead(handle) -> None:
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(handle.counters.remote(), timeout=30)


def assert_refuses_calls_until_cleared(job) -> None:
    with pytest.raises(MachineError, match="clear_default_session"):
        job(*data(2))


def assert_cleared_session_runs_again(address: str) -> None:
    flow.clear_default_session()
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(address)
    losses, _ = run(mlp_train(["0:0", "1:0"]), steps=1)
    np.testing.assert_allclose(losses[0], one_device_reference(steps=1)[0][0], rtol=1e-5)


def test_a_kernel_raising_on_machine_1_names_the_machine_task_op_and_job(ray_cluster):
    job, rt = start(ray_cluster)
    host = rt.hosts[1]
    images, labels = data(1)
    labels[BATCH - 1] = 99  # the second half of the batch is machine 1's (split on the batch axis)
    t0 = time.monotonic()
    with pytest.raises(MachineError) as info:
        job(images, labels)
    assert time.monotonic() - t0 < 20
    text = str(info.value)
    assert "machine 1 (127.0.0.2) failed in task" in text
    assert "op 'softmax_loss'" in text and "job 'train_job'" in text and "99" in text
    assert "the other machines were stopped" in text
    assert_dead(host)
    assert_refuses_calls_until_cleared(job)
    assert_cleared_session_runs_again(ray_cluster)


def test_killing_machine_1_mid_call_is_a_clear_error_within_seconds(ray_cluster):
    job, rt = start(ray_cluster)
    host = rt.hosts[1]
    killed = []

    def kill_once(event):  # the first act of the call: machine 1 dies while machine 0 works
        if not killed:
            killed.append(event)
            ray.kill(host, no_restart=True)

    rt.hooks.append(kill_once)
    t0 = time.monotonic()
    with pytest.raises(MachineError, match=r"machine 1 \(127\.0\.0\.2\) died") as info:
        job(*data(1))
    assert killed and time.monotonic() - t0 < 20
    assert "the other machines were stopped" in str(info.value)
    assert_refuses_calls_until_cleared(job)


def test_a_kernel_raising_on_machine_0_stops_machine_1(ray_cluster):
    job, rt = start(ray_cluster)
    host = rt.hosts[1]
    images, labels = data(1)
    labels[0] = -3  # machine 0's half
    with pytest.raises(KernelError, match="softmax_loss"):
        job(images, labels)
    assert_dead(host)
    assert_refuses_calls_until_cleared(job)
