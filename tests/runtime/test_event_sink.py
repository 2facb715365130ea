"""Observation is a sink, not a path (flowlab/runtime/events.py): a runtime with a subscriber runs the same acts, by
the same ``Runtime.acts``, as one with nobody listening, and tells the sink of each act exactly once.

Compared bit for bit on the protocol alone (FLOWLAB_REPLAY=0, FLOWLAB_THREADS=0: no replay hides an act, one
order) on one and two CPU devices: every returned array, watched value and variable, and the whole protocol state
(``protocol_state``, which leaves out only who listens). The unobserved side is checked to build nothing for
observation: no record of moved registers, no event.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.replay.state import differences, protocol_state
from flowlab.runtime import ActEvent, JobInstance, Runtime, events
from flowlab.runtime.actor import Actor
from flowlab.runtime.events import Subscribers
from flowlab.runtime.threads import compute_threads
from tests.helpers.replay_models import MODELS

CALLS = 5
X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


def pad_session() -> Any:
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)  # compile and start
    return flow.default_session()


def launch_call(rt: Runtime, x: np.ndarray, out: list) -> None:
    rt.launch(JobInstance("System-Push-Input_0", push_array=x))
    rt.launch(JobInstance("pad_Job"))
    rt.launch(JobInstance("System-Pull-Return_0", on_pull=out.append))


def bits(a: Any) -> tuple[str, tuple[int, ...], bytes]:
    a = np.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def run(model: str, devices: int, observed: bool, monkeypatch: pytest.MonkeyPatch, threads: str = "0"
        ) -> dict[str, Any]:
    """CALLS calls of a model in a fresh session by the protocol alone; with ``observed``, a subscriber listens
    from the second call on (the first starts the runtime) and checks each event as it comes. ``threads``: the
    FLOWLAB_THREADS setting ("0": one order, on the caller's thread; "": as the Plan chooses)."""
    monkeypatch.setenv("FLOWLAB_REPLAY", "0")
    monkeypatch.setenv("FLOWLAB_THREADS", threads)
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    watched: list[np.ndarray] = []
    call = MODELS[model](watched)
    outputs = [call(0)]
    rt = flow.default_session().runtime
    seen: list[ActEvent] = []
    wrong: list[str] = []
    where: set[str] = set()

    def listen(event: ActEvent) -> None:
        # what the act wrote carries its act id (Actor.moved read the registers off the slots' fronts)
        for rid, index in event.written:
            if rt.regsts[rid][index].act_id != event.act_id:
                wrong.append(f"{event}: wrote r{rid}[{index}], which holds act {rt.regsts[rid][index].act_id}")
        seen.append(event)
        where.add(threading.current_thread().name)

    if observed:
        rt.hooks.append(listen)
        assert isinstance(rt.sink, Subscribers)
    before = rt.seq
    outputs += [call(k) for k in range(1, CALLS)]
    acts = rt.seq - before
    parallel = rt.threads is not None and rt.threads.active
    if observed:
        rt.hooks.remove(listen)
    assert rt.sink is None and not rt.hooks
    rt.stop_threads()  # back to one scheduler, kernels their own, before the state is read
    return {"parallel": parallel, "where": where, "outputs": outputs, "watched": watched,
            "variables": flow.get_all_variables(), "state": protocol_state(rt), "acts": acts, "seen": seen,
            "wrong": wrong, "start": before, "rt": rt}


@pytest.mark.parametrize(("model", "devices"), [("mlp_sgd_momentum", 1), ("mlp_adam", 2)])
def test_observed_and_unobserved_calls_agree_bit_for_bit_and_every_act_is_reported_once(model, devices, monkeypatch):
    built: list[int] = []
    original = events.act_event
    monkeypatch.setattr(events, "act_event", lambda *args: (built.append(1), original(*args))[1])
    moved: list[int] = []
    original_moved = Actor.moved
    monkeypatch.setattr(Actor, "moved", lambda self: (moved.append(1), original_moved(self))[1])

    quiet = run(model, devices, False, monkeypatch)
    assert built == [] and moved == []  # nobody listened: no event built, no moved registers read off
    loud = run(model, devices, True, monkeypatch)
    assert len(compute_threads(loud["rt"].plan)) == devices

    for k, (a, b) in enumerate(zip(quiet["outputs"], loud["outputs"], strict=True)):
        assert [bits(x) for x in a] == [bits(x) for x in b], f"call {k} returned other values"
    assert len(quiet["watched"]) == len(loud["watched"])
    for k, (a, b) in enumerate(zip(quiet["watched"], loud["watched"])):
        assert bits(a) == bits(b), f"watched value {k} differs"
    assert quiet["variables"].keys() == loud["variables"].keys() and quiet["variables"]
    for name, value in quiet["variables"].items():
        assert bits(value) == bits(loud["variables"][name]), f"variable {name} differs"
    assert quiet["state"] == loud["state"], "\n".join(differences(quiet["state"], loud["state"]))

    # every act reported once, in order: consecutive sequence numbers, each actor's act ids consecutive
    seen = loud["seen"]
    assert loud["acts"] == quiet["acts"] == len(seen) == len(built) > 50
    assert [e.seq for e in seen] == list(range(loud["start"], loud["start"] + len(seen)))
    per_actor: dict[int, list[int]] = {}
    for event in seen:
        per_actor.setdefault(event.actor_id, []).append(event.act_id)
    rt = loud["rt"]
    for actor_id, act_ids in per_actor.items():
        last = rt.actors[actor_id].act_id
        assert act_ids == list(range(last - len(act_ids) + 1, last + 1)), rt.actors[actor_id].name
    assert not loud["wrong"], "\n".join(loud["wrong"][:5])
    # and every register read was written by an earlier act (a call starts and ends idle, every register home)
    written: set[tuple[int, int]] = set()
    for event in seen:
        assert set(event.read) <= written, f"{event} read a register no act wrote"
        written.update(event.written)
    assert sum(len(e.read) for e in seen) > len(seen)


def test_a_sink_keeps_a_parallel_call_parallel_and_hears_every_act_once(monkeypatch):
    """On a Plan with two compute threads (parallel run mode), a subscriber does not send the call to another loop:
    the OS threads act and report each act to the sink (under the runtime's lock, one at a time, in the order
    they happened), and the results are the unobserved parallel run's and the stepped run's bit for bit."""
    stepped = run("mlp_adam", 2, False, monkeypatch)
    quiet = run("mlp_adam", 2, False, monkeypatch, threads="")
    loud = run("mlp_adam", 2, True, monkeypatch, threads="")
    assert quiet["parallel"] and loud["parallel"] and not stepped["parallel"]
    assert {"flowlab-thrd-0:0", "flowlab-thrd-0:1"} <= loud["where"]  # reported from the loops' own threads
    for other in (quiet, loud):
        for k, (a, b) in enumerate(zip(stepped["outputs"], other["outputs"], strict=True)):
            assert [bits(x) for x in a] == [bits(x) for x in b], f"call {k} returned other values"
        for name, value in stepped["variables"].items():
            assert bits(value) == bits(other["variables"][name]), f"variable {name} differs"
    seen = loud["seen"]
    assert [e.seq for e in seen] == list(range(loud["start"], loud["start"] + loud["acts"])) and len(seen) > 50
    assert len({(e.actor_id, e.act_id) for e in seen}) == len(seen) and not loud["wrong"]


def test_the_sink_follows_the_subscribers_list():
    """``runtime.hooks`` attaches a Subscribers sink with its first subscriber and detaches it with its last, by
    every way a list changes."""
    rt = Runtime(pad_session().plan)
    assert rt.sink is None
    hook: Callable[[ActEvent], None] = lambda event: None
    for add, drop in [(lambda: rt.hooks.append(hook), lambda: rt.hooks.remove(hook)),
                      (lambda: rt.hooks.extend([hook, hook]), lambda: rt.hooks.clear()),
                      (lambda: rt.hooks.insert(0, hook), lambda: rt.hooks.pop()),
                      (lambda: rt.hooks.__iadd__([hook]), lambda: rt.hooks.__delitem__(slice(None)))]:
        add()
        assert isinstance(rt.sink, Subscribers) and rt.sink.hooks is rt.hooks
        drop()
        assert rt.sink is None and rt.hooks == []


def test_step_and_close_report_through_the_sink():
    """``step()`` returns the event the sink built (and builds one for its caller with nobody listening);
    ``close()`` drains through the same act, telling the subscribers of every closing act."""
    rt = Runtime(pad_session().plan)
    out: list = []
    launch_call(rt, X, out)
    event = rt.step()
    assert isinstance(event, ActEvent) and rt.sink is None and event.seq == 0
    seen: list[ActEvent] = []
    rt.hooks.append(seen.append)
    event = rt.step()
    assert seen == [event] and event.seq == 1
    assert rt.step(False) is True and len(seen) == 2 and seen[-1].seq == 2
    rt.close()
    assert len(out) == 1 and {a.state for a in rt.actors.values()} == {"done"}
    assert [e.seq for e in seen] == list(range(1, rt.seq)) and len(seen) > 10


def test_a_subscriber_that_raises_leaves_the_protocol_consistent():
    """A sink is told of an act after the runtime's bookkeeping of it: a subscriber raising (an interrupt from a
    progress hook, say) leaves the act counted and the actor queued again when ready, so the call can go on."""
    plan = pad_session().plan
    rt, ref = Runtime(plan), Runtime(plan)
    outs: list[list] = [[], []]
    for runtime, out in ((rt, outs[0]), (ref, outs[1])):
        launch_call(runtime, X, out)
    calls = []

    def fail_once(event: ActEvent) -> None:
        calls.append(event.seq)
        if len(calls) == 3:
            raise KeyboardInterrupt

    rt.hooks.append(fail_once)
    with pytest.raises(KeyboardInterrupt):
        while rt.step(False) is not None:
            pass
    assert rt.seq == 3
    while rt.step(False) is not None:
        pass
    while ref.step(False) is not None:
        pass
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    assert protocol_state(rt) == protocol_state(ref)
    assert calls == list(range(rt.seq))


def test_instances_run_by_run_protocol_are_reported_in_the_order_step_takes_them():
    """run_protocol's loop with a sink reports the acts step() performs one by one, in the same order."""
    plan = pad_session().plan
    looped, stepped = Runtime(plan), Runtime(plan)
    order: list[tuple[int, int]] = []
    looped.hooks.append(lambda e: order.append((e.actor_id, e.act_id)))
    out: list = []
    looped.run_protocol([JobInstance("System-Push-Input_0", push_array=X), JobInstance("pad_Job"),
                         JobInstance("System-Pull-Return_0", on_pull=out.append)])
    launch_call(stepped, X, [])
    expected = []
    while (event := stepped.step()) is not None:
        expected.append((event.actor_id, event.act_id))
    assert order == expected and len(order) > 10 and len(out) == 1
