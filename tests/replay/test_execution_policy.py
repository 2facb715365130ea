"""ExecutionPolicy (flowlab/runtime/policy.py): which executor runs a session's calls, decided once from the flags
and the Plan, printed with the reason for every executor taken or declined, and obeyed by the runtime it builds."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.runtime import policy as policy_mod
from flowlab.runtime.policy import LADDER, ExecutionPolicy, decide

B, D = 4, 6


def mlp(devices: int = 1) -> Any:
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            h = flow.layers.dense(x, 5, activation=flow.nn.relu, name="hidden")
            logits = flow.layers.dense(h, 3, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    return train_job


def call(job: Any, times: int = 1) -> None:
    x, y = np.ones((B, D), np.float32), np.arange(B, dtype=np.int32) % 3
    for _ in range(times):
        job(x, y)


def lines(policy: ExecutionPolicy) -> dict[str, str]:
    """Each executor's line of ``str(policy)``, by executor."""
    out = {}
    for line in str(policy).splitlines()[1:]:
        parts = line.split()
        if parts and parts[0] in ("yes", "no") and parts[1] in LADDER:
            out[parts[1]] = line.strip()
    return out


def test_one_device_replays_fuses_and_generates_calls() -> None:
    job = mlp()
    call(job)
    session = flow.default_session()
    policy = session.execution
    assert policy.executor == "callgen" and repr(policy) == \
        "<ExecutionPolicy session: callgen; declined: threads, lanes, ray>"
    shown = lines(policy)
    assert list(shown) == list(LADDER)
    assert shown["protocol"].startswith("yes protocol")
    assert shown["replay"] == ("yes replay    replay of each call's captured Schedule: flag replay=on, one process, "
                               "host kernels")
    assert shown["lanes"] == ("no  lanes     replay as one lane per Plan thread, on OS threads: one Plan thread "
                              "computes: threads would add hand-offs only")
    assert shown["threads"].endswith("replay runs the calls")
    assert shown["ray"].endswith("one machine")
    assert str(policy).splitlines()[0] == "execution (session): callgen (a generated call per fused job function)"
    rt = session.runtime
    assert rt.layer is not None and rt.layer.fuse and rt.threads is None  # what the policy says is what was built


def test_two_devices_replay_on_lanes_and_decline_callgen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy_mod, "available_cores", lambda: 2)  # lanes pass the Plan's facts: a trial follows
    monkeypatch.setattr(policy_mod, "blas_threads", lambda: 1)
    job = mlp(devices=2)
    call(job, 2)
    session = flow.default_session()
    policy = session.execution
    assert policy.executor == "lanes" and policy.parallel
    shown = lines(policy)
    assert shown["lanes"].startswith("yes lanes") and shown["lanes"].endswith(
        ": 2 Plan threads compute on 2 cores; replays time lanes against one thread before keeping them")
    assert shown["callgen"].endswith("calls replay on lanes (a generated call runs on the caller's thread only)")
    assert session.runtime.threads is not None
    captured = [c for c in session.runtime.layer.schedules.values() if "train_job" in c.key]
    assert captured and all(c.lanes is not None and len(c.ir.lanes) == 2 for c in captured)  # one per rotation


def test_replay_off_is_protocol_stepping_with_the_flag_as_reason() -> None:
    with flow.flags(replay=False):
        job = mlp()
        call(job)
    session = flow.default_session()
    policy = session.execution
    assert policy.executor == "protocol"
    shown = lines(policy)
    assert shown["replay"].endswith(": flag replay=off")
    for name in ("fused", "lanes", "callgen"):
        assert shown[name].endswith(": no replay"), shown[name]
    assert session.runtime.layer is None
    assert session.schedule_of(job) is None  # no replay layer: nothing captured


def test_replay_off_on_two_devices_steps_the_protocol_on_os_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy_mod, "available_cores", lambda: 2)
    monkeypatch.setattr(policy_mod, "blas_threads", lambda: 1)
    with flow.flags(replay=False):
        job = mlp(devices=2)
        call(job)
    policy = flow.default_session().execution
    assert policy.executor == "threads"
    assert lines(policy)["threads"].endswith(": 2 Plan threads compute on 2 cores")
    assert flow.default_session().runtime.threads is not None


def test_flags_are_read_once_when_the_runtime_starts() -> None:
    job = mlp()
    call(job)
    session = flow.default_session()
    before = session.execution
    with flow.flags(replay=False, fuse=False, callgen=False):
        call(job)
        assert session.execution is before and session.runtime.layer is not None
    with flow.flags(fuse=False, callgen=False):
        flow.clear_default_session()
        job = mlp()
        call(job)
        policy = flow.default_session().execution
    assert policy.executor == "replay"
    shown = lines(policy)
    assert shown["fused"].endswith(": flag fuse=off")
    assert shown["callgen"].endswith(": no fused segments (flag fuse=off)")
    assert not flow.default_session().runtime.layer.fuse


def test_the_debugger_steps_the_protocol() -> None:
    job = mlp()
    call(job)
    debugger = flow.debug(job, np.ones((B, D), np.float32), np.zeros(B, np.int32))
    policy = debugger.execution
    assert policy.context == "flow.debug" and policy.executor == "protocol"
    assert lines(policy)["replay"].endswith("flow.debug steps the protocol act by act (the debugger drives it)")
    assert debugger.runtime.layer is None


def test_a_gpu_plan_runs_on_the_protocol() -> None:
    from flowlab.kernels import cuda_available

    if not cuda_available():
        pytest.skip("no CUDA device and the simulator is off")

    @flow.global_function()
    def pad_job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    flow.default_session().try_init()
    session = flow.default_session()
    policy = session.execution
    assert policy.executor == "protocol"
    shown = lines(policy)
    assert shown["replay"].endswith("a GPU Plan: replay captures host kernel calls; its streams order the acts")
    assert shown["threads"].endswith("a GPU Plan acts on one host thread (its streams run the kernels "
                                     "asynchronously)")
    assert session.runtime.layer is None and session.runtime.threads is None


def test_machines_on_ray_decline_replay() -> None:
    job = mlp()
    call(job)
    plan = flow.default_session().plan
    two = dataclasses.replace(plan, tasks=tuple(dataclasses.replace(t, machine_id=k % 2)
                                                for k, t in enumerate(plan.tasks)))
    policy = decide(two, ray=True)
    assert policy.executor == "ray"
    assert lines(policy)["replay"].endswith("2 machines on Ray: a capture sees the acts of one process")
    assert lines(decide(two))["ray"].endswith("Ray off: the machines run in this process")


def test_payload_and_schedule_of() -> None:
    job = mlp()
    call(job, 3)
    session = flow.default_session()
    payload = session.execution.to_payload()
    assert payload["executor"] == "callgen"
    assert [c["executor"] for c in payload["choices"]] == list(LADDER)
    schedule = session.schedule_of(job)
    assert schedule is not None and "train_job" in schedule.key
    assert str(schedule).splitlines()[0].startswith("schedule System-Push-Input_0 + System-Push-Input_1 + "
                                                    "train_job + System-Pull-Return_0: ")
    view = session.schedule_payload(job)
    assert view["execution"] == payload
    (first, *_) = view["schedules"]
    assert first["key"] == list(schedule.key) and len(first["steps"]) == len(schedule.steps)
    assert first["runs_on"] in ("replay", "fused", "callgen")
    import json

    json.dumps(view)  # JSON-ready as it is
    with pytest.raises(ValueError, match="is not a job function of this session"):
        session.schedule_of(lambda: None)


def test_act_events_and_records_name_their_executor() -> None:
    """Events are built only when someone observes; observing does not change the executor (a replayed call's
    events name it), and the debugger's act records name the protocol it steps."""
    job = mlp()
    call(job, 3)
    session = flow.default_session()
    rt = session.runtime
    events: list[Any] = []
    rt.hooks.append(events.append)
    try:
        call(job)
    finally:
        rt.hooks.remove(events.append)
    (name,) = {e.executor for e in events}  # the rung that ran the call: not yet fused after 3 calls
    assert session.executor.name == "callgen" and name == "replay"
    assert "observed: a subscriber (runtime.hooks) gets a replayed call's act events" in str(session.execution)
    assert "breakpoint" in str(session.execution)  # what a replay cannot give, said where the policy is printed
    debugger = flow.debug(job, np.ones((B, D), np.float32), np.zeros(B, np.int32))
    assert debugger.step().executor == "protocol"
    assert debugger.recorder.acts[-1]["executor"] == "protocol"


def test_a_call_on_the_plan_threads_names_the_threads_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replay off on two devices: the protocol on one OS thread per Plan thread; its act events say "threads"."""
    monkeypatch.setenv("FLOWLAB_REPLAY", "0")
    job = mlp(devices=2)
    call(job)
    session = flow.default_session()
    assert session.executor.name == "threads" and session.runtime.threads is not None
    events: list[Any] = []
    session.runtime.hooks.append(events.append)
    try:
        call(job)
    finally:
        session.runtime.hooks.remove(events.append)
    assert events and {e.executor for e in events} == {"threads"}
    assert str(session.executor).startswith("threads: protocol stepping, one OS thread per Plan thread")
