"""Mirrored returns through the generated call (replay/callgen.py): a tp.ListNumpy return is its devices' pieces,
as the general path pulls it, bit for bit, and so are tp.ListNumpy watches, DistributeSplit of a consistent
input and flow.advanced's distribute ops in the call. (tp.ListNumpy arguments: test_callgen_list_numpy.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.replay.callgen import GENERATED
from flowlab.replay.fused import FUSE_AFTER
from flowlab.replay.state import differences, protocol_state

# the compiled segment (and the generated call) must run by a given call: compiled in the call that fuses
pytestmark = pytest.mark.usefixtures("fuse_in_call")

CALLS = 2 * (FUSE_AFTER + 1) + 6  # two schedules take turns (rotating registers): each fuses, then runs


@pytest.fixture(autouse=True)
def replayed(monkeypatch):
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")
    monkeypatch.setenv("FLOWLAB_THREADS", "0")  # one thread: the generated call (lanes replay run mode's threads)


def bits(a: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    return a.dtype.str, a.shape, a.tobytes()


def run(callgen: bool, monkeypatch, replay: bool = True) -> dict:
    monkeypatch.setenv("FLOWLAB_CALLGEN", "1" if callgen else "0")
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    watched: list = []

    def as_list(y: tp.ListNumpy) -> None:
        watched.append(y)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3)), z: tp.Numpy.Placeholder((4, 3))
              ) -> tuple[tp.ListNumpy, tp.ListNumpy, tp.Numpy, tp.ListNumpy]:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
        with flow.scope.mirrored_view():
            vm = flow.cast_to_current_logical_view(v)
            y = flow.math.square(x + vm)
            own = flow.math.reduce_sum(z * vm, axis=0, keepdims=True)  # each device's rows of z (DistributeSplit)
            flow.watch(own, as_list)
            loss = flow.math.reduce_mean(y) + flow.math.reduce_mean(own)
        doubled = []
        for i, piece in enumerate(flow.advanced.distribute_split(z)):
            with flow.scope.placement("cpu", f"0:{i}"):
                doubled.append(piece * 2.0)
        joined = flow.advanced.distribute_concat(doubled)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return y, own, joined, vm

    rng = np.random.default_rng(3)
    out = []
    for _ in range(CALLS):
        x, z = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
        y, own, joined, vm = train(x, z)
        assert [type(r) for r in (y, own, vm)] == [list, list, list] and type(joined) is np.ndarray
        out.append([[bits(p) for p in y], [bits(p) for p in own], bits(joined), [bits(p) for p in vm]])
    session = flow.default_session()
    return {"out": out, "watched": [[bits(p) for p in w] for w in watched], "state": protocol_state(session.runtime),
            "variables": {k: bits(v) for k, v in flow.get_all_variables().items()},
            "generated": dict(session.generated_calls)}


def test_a_mirrored_train_call_is_generated_and_is_the_general_path_bit_for_bit(monkeypatch):
    general = run(False, monkeypatch)
    fast = run(True, monkeypatch)
    assert general["generated"] == {}
    call = fast["generated"]["train"]
    assert call.runs >= 4 and all(s.callgen == GENERATED for s in call.schedules)
    assert "mirrored_list(" in call.source  # the pulled blobs cut into the devices' pieces
    assert len(fast["watched"]) == CALLS and all(len(w) == 2 for w in fast["watched"])
    for key in ("out", "watched", "variables"):
        assert general[key] == fast[key], key
    assert general["state"] == fast["state"], "\n".join(differences(general["state"], fast["state"]))


def test_the_threads_lanes_replay_of_the_mirrored_call_is_the_protocol_bit_for_bit(monkeypatch):
    """Run mode with a thread per device replays in lanes (replay/lanes.py), the same values as the protocol."""
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    protocol = run(False, monkeypatch, replay=False)
    lanes = run(False, monkeypatch)
    layer = flow.default_session().runtime.layer
    assert layer is not None and layer.replays > 0
    for key in ("out", "watched", "variables"):
        assert protocol[key] == lanes[key], key
