"""Hangs on purpose-built Plans: each run path stops and raises HangError naming who waits for whom.

References are the hand-built defects themselves: the two tasks edited into a register cycle must be exactly the
cycle reported, and the consumer patched never to return a register must be named with that register.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import FlowlabError
from flowlab.runtime import Runtime
from flowlab.runtime.hang import Blocked, HangError, RuntimeIdle, find_cycle
from tests.helpers.hang_plans import X, call, cycle_plan, leak, pad_plan


def check_cycle(err: HangError, ctrl_id: int) -> None:
    graph = err.value.graph if hasattr(err, "value") else err.graph
    assert set(graph.cycle) == {"reflection_pad2d_0", "Return_0"}
    assert len(graph.cycle) == 2
    by_name = {b.actor: b for b in graph.blocked if b.job == "pad_Job"}
    assert by_name["reflection_pad2d_0"].waits_for == ("Return_0",)
    assert graph.cycle_ids == tuple(by_name[n].actor_id for n in graph.cycle)
    assert f"r{ctrl_id} from Return_0" in by_name["reflection_pad2d_0"].reason
    assert "reflection_pad2d_0" in by_name["Return_0"].waits_for
    text = str(err.value if hasattr(err, "value") else err)
    assert "deadlock: a cycle of waits" in text and "last acts on machine 0" in text
    assert "Input_0 #1" in text  # the push job's Input_0 and the user job's acted before the wait


@pytest.mark.parametrize("threads", ["0", "1"])
def test_a_register_cycle_raises_hang_error_naming_the_cycle(threads, monkeypatch):
    monkeypatch.setenv("FLOWLAB_THREADS", threads)
    plan, ctrl_id = cycle_plan()
    rt = Runtime(plan)
    assert (rt.threads is not None) == (threads == "1")
    t0 = time.perf_counter()
    with pytest.raises(HangError) as err:
        rt.run_call(call([]))
    assert time.perf_counter() - t0 < 10
    assert isinstance(err.value, RuntimeIdle) and isinstance(err.value, FlowlabError)
    check_cycle(err.value, ctrl_id)
    assert err.value.graph.to_dot().count("color=red];") == 2  # both edges of the cycle drawn red
    rt.stop_threads()


def test_stepping_the_cycle_plan_ends_with_the_same_diagnosis():
    plan, ctrl_id = cycle_plan()
    rt = Runtime(plan)
    for instance in call([]):
        rt.launch(instance)
    while rt.step() is not None:
        pass
    with pytest.raises(HangError) as err:
        rt.run_until(lambda: False)
    check_cycle(err.value, ctrl_id)
    assert str(rt.wait_graph()) in str(err.value)


@pytest.mark.parametrize("threads", ["0", "1"])
def test_a_consumer_that_never_returns_a_register_is_named(threads, monkeypatch):
    monkeypatch.setenv("FLOWLAB_THREADS", threads)
    rt = Runtime(pad_plan())
    rid = leak(rt, "Return_0", "pad_Job")
    out: list = []
    rt.run_call(call(out))  # the first call runs: the register is lost only once Return_0 acted
    np.testing.assert_array_equal(out[0], np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    with pytest.raises(HangError) as err:
        rt.run_call(call(out))
    graph = err.value.graph
    pad = next(b for b in graph.blocked if b.actor == "reflection_pad2d_0")
    ret = next(b for b in graph.blocked if b.actor == "Return_0" and b.job == "pad_Job")
    assert graph.cycle_ids in ((pad.actor_id, ret.actor_id), (ret.actor_id, pad.actor_id))
    assert pad.waits_for == ("Return_0",)
    assert f"r{rid}#0 was taken and never returned" in pad.reason
    assert set(graph.cycle) == {"reflection_pad2d_0", "Return_0"}
    assert "reflection_pad2d_0 #1" in graph.recent[0]  # its last act (of the first call) is in the ring
    assert "Input_0 #2" in graph.recent[0]  # the second call got as far as the user job's Input_0
    rt.stop_threads()


def test_find_cycle_on_hand_graphs():
    def b(i, *waits):
        return Blocked(f"t{i}", i, 0, 0, 0, "", (), False, waits)
    assert find_cycle((b(1, 2), b(2, 3), b(3))) == ()
    assert find_cycle((b(1, 2), b(2, 3), b(3, 2))) == (2, 3)
    assert find_cycle((b(9, 1), b(1, 2), b(2, 3), b(3, 1))) == (1, 2, 3)
    assert find_cycle((b(3, 1), b(1, 2), b(2, 3))) == (3, 1, 2)  # starts at the first listed
    assert find_cycle((b(1, 1),)) == (1,)


def test_a_session_call_that_hangs_raises_and_why_stuck_says_the_same(monkeypatch):
    monkeypatch.setenv("FLOWLAB_REPLAY", "0")  # the replay layer performs calls itself, past the patched actor
    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)
    session = flow.default_session()
    idle = flow.debug.why_stuck()
    assert idle.pending == () and idle.cycle == () and "no call in flight" in str(idle)
    rid = leak(session.runtime, "Return_0", "pad_Job")
    pad_Job(X)
    with pytest.raises(flow.debug.HangError) as err:
        pad_Job(X)
    graph = err.value.graph
    assert graph.pending == ("pad_Job", "System-Pull-Return_0")  # the push job finished, oldest first
    assert set(graph.cycle) == {"reflection_pad2d_0", "Return_0"}
    assert f"r{rid}#0 was taken and never returned" in str(err.value)
    payload = graph.to_payload()
    cycle_nodes = {f"t:{i}" for i in graph.cycle_ids}
    assert set(payload["cycle"]) == cycle_nodes
    assert {k for k, v in graph.marks().items() if v == "cycle"} == cycle_nodes


def test_the_debugger_shows_why_stuck_between_steps():
    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)
    dbg = flow.debug(pad_Job, X)
    dbg.run_to("pad_Job/reflection_pad2d_0")  # stopped before it acts: Input_0's register waits in its slot
    graph = flow.debug.why_stuck(dbg)
    assert graph.cycle == () and graph.pending
    # reflection_pad2d_0 can act, so it is not blocked; Input_0 waits for its register to come back
    assert "reflection_pad2d_0" not in {b.actor for b in graph.blocked}
    inp = next(b for b in graph.blocked if b.actor == "Input_0" and b.job == "pad_Job")
    assert inp.waits_for[-1] == "reflection_pad2d_0" and inp.holds
    assert graph.recent[0][-1] == "Input_0 #1"
    dbg.continue_()
    assert dbg.finished and not flow.debug.why_stuck(dbg).pending
