"""The debugger steps a run on two Ray machines act by act: the same order every time, the one-device result,
registers visibly in flight between machines, and a Perfetto trace with one process per machine."""

from __future__ import annotations

import json

import numpy as np
import pytest

import flowlab as flow

from .programs import data, mlp_train, one_device_reference

ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra")
pytestmark = pytest.mark.ray


def act_of(dbg, event):
    """(machine, actor, act id) of an act event."""
    rt = dbg.runtime
    task = (rt.actors.get(event.actor_id) or rt.remote_actors[event.actor_id]).task  # machine 1's: a remote one
    return task.machine_id, event.actor_name, event.act_id


def step_all(dbg):
    order, in_flight, blocked = [], [], []
    while not dbg.finished:
        order.append(act_of(dbg, dbg.step()))
        if dbg.runtime.remote:  # Ray's stepper: what the last act sent and is not delivered yet
            in_flight.extend(dbg.stepper.in_flight())
        blocked.extend(r for a in dbg.runtime.actors.values() if (r := a.blocked_reason()) and "in flight" in r)
    return order, in_flight, blocked


def test_stepping_two_ray_machines_is_deterministic_and_shows_registers_in_flight(ray_cluster, tmp_path):
    ref_losses, _ = one_device_reference(steps=2)
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    job = mlp_train(["0:0", "1:0"])
    job(*data(0))
    one_process, _, _ = step_all(flow.debug(job, *data(1)))  # the same Plan, protocol stepping in this process
    flow.clear_default_session()

    flow.env.ray(ray_cluster)
    job = mlp_train(["0:0", "1:0"])
    job(*data(0))
    dbg = flow.debug(job, *data(1))
    order, in_flight, blocked = step_all(dbg)
    assert {m for m, _, _ in order} == {0, 1}  # acts on both machines, in one sequence
    # Every act of the one-process protocol (machine, actor, act id), none more: only how the machines' acts
    # interleave differs (a register between machines arrives one step late)
    assert sorted(order) == sorted(one_process)
    np.testing.assert_allclose(dbg.result, ref_losses[1], rtol=1e-5)  # the second step of the one-device run
    assert any("from machine 0 to machine 1" in f for f in in_flight)
    assert any("from machine 1 to machine 0" in f for f in in_flight)
    assert any("is in flight from machine 1" in b for b in blocked)  # why blocked names the register moving

    trace = json.loads(dbg.export_trace(tmp_path / "trace.json").read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in trace if e["name"] == "process_name"}
    assert processes == {0: "machine 0", 1: "machine 1"}
    assert {e["pid"] for e in trace if e["ph"] == "X"} == {0, 1}
    comm = [e for e in trace if e["ph"] == "X" and e["cat"] == "CopyCommNet"]
    assert {e["pid"] for e in comm} == {0, 1}  # register traffic in both directions is in the trace

    dbg.restart()
    for _ in range(5):
        dbg.step()
    assert "(machine 1 (127.0.0.2)): waiting for register" in dbg.runtime.describe_blocked()  # both machines' actors

    dbg.restart()  # the same order again (a prefix: each remote act is a Ray round trip)
    again = []
    for _ in range(60):
        event = dbg.step()
        again.append(act_of(dbg, event))
        assert event.executor == "ray", (again[-1], event)  # machine 1's events too (stepped on its host)
    assert again == order[:60]
    assert dbg.execution.executor == "ray" and dbg.execution.context == "flow.debug"

    host = dbg.runtime.hosts[1]
    flow.clear_default_session()  # the debugger's machine actors stop with the session
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(host.counters.remote(), timeout=30)
