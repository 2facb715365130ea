"""A machine that stops answering (its process suspended with SIGSTOP mid-call): the driver raises
MachineHangError (a MachineError and a HangError) after FLOWLAB_MACHINE_TIMEOUT seconds, naming the silent machine,
with machine 0's blocked actors (some waiting for a register from machine 1) and machine 0's last acts."""

from __future__ import annotations

import os
import signal
import time

import pytest

import flowlab as flow
from flowlab.runtime.hang import HangError

from .programs import data, mlp_train

ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra")
pytestmark = pytest.mark.ray

from flowlab.distributed import MachineError, MachineHangError  # noqa: E402


def test_a_machine_that_stops_answering_raises_the_wait_for_graph_in_bounded_time(ray_cluster):
    flow.clear_default_session()
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(ray_cluster)
    job = mlp_train(["0:0", "1:0"])
    job(*data(0))  # the machines are up and have run one step
    rt = flow.default_session().runtime
    rt.stall_s = 3.0  # FLOWLAB_MACHINE_TIMEOUT, read when the runtime was made
    pid = ray.get(rt.hosts[1].__ray_call__.remote(lambda host: os.getpid()), timeout=30)
    stopped = []

    def suspend_once(event):  # the first act of the call: machine 1 freezes while machine 0 works
        if not stopped:
            stopped.append(event)
            os.kill(pid, signal.SIGSTOP)

    rt.hooks.append(suspend_once)
    t0 = time.monotonic()
    try:
        with pytest.raises(MachineHangError) as info:
            job(*data(1))
    finally:
        if stopped:
            try:
                os.kill(pid, signal.SIGCONT)  # if the shutdown did not kill it, let it go
            except ProcessLookupError:
                pass
    took = time.monotonic() - t0
    assert stopped and took < 25, took
    err = info.value
    assert isinstance(err, MachineError) and isinstance(err, HangError)
    graph = err.graph
    assert any("machine 1 (127.0.0.2)" in m for m in graph.silent), graph.silent
    assert graph.recent[0], "machine 0's last acts"
    on_1 = {t.task_id for t in rt.plan.tasks if t.machine_id == 1}
    waiting_on_1 = [b for b in graph.blocked if b.machine == 0 and set(b.waits_on) & on_1]
    assert waiting_on_1, str(graph)
    assert "did not answer" in str(err) and "FLOWLAB_MACHINE_TIMEOUT" in str(err)
    flow.clear_default_session()
