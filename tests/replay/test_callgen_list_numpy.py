"""tp.ListNumpy arguments through the generated call (replay/callgen.py): a mirrored job's one array per device is
pushed as the general path pushes it (the pieces joined in the push's register), bit for bit with the protocol,
and a call with the wrong number of arrays or a piece of the wrong shape goes the general way, whose error it is."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import JobArgumentError
from flowlab.replay.callgen import GENERATED
from flowlab.replay.fused import FUSE_AFTER
from flowlab.replay.state import differences, protocol_state

# the compiled segment (and the generated call) must run by a given call: compiled in the call that fuses
pytestmark = [pytest.mark.usefixtures("fuse_in_call"), pytest.mark.skip(
    reason="tp.ListNumpy placeholders make dynamic blobs (OneFlow's mirrored blobs), and the ExecutionPolicy keeps a "
           "Plan with dynamic blobs on the protocol (runtime/policy.py dynamic_blobs): no generated call takes "
           "ListNumpy arguments now; tests/runtime/test_dynamic_blobs.py checks the rule")]

CALLS = 2 * (FUSE_AFTER + 1) + 6  # two schedules may take turns (rotating registers): each fuses, then runs
PER, IN, OUT = 3, 4, 2


@pytest.fixture(autouse=True)
def replayed(monkeypatch):
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")
    monkeypatch.setenv("FLOWLAB_THREADS", "0")  # one thread: the generated call (lanes replay run mode's threads)


def bits(a: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    return a.dtype.str, a.shape, a.tobytes()


def define(devices: int):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train(x: tp.ListNumpy.Placeholder((PER, IN)), y: tp.ListNumpy.Placeholder((PER,), dtype=flow.int32)
              ) -> tuple[tp.ListNumpy, tp.Numpy]:
        logits = flow.layers.dense(x, OUT, kernel_initializer=flow.constant_initializer(0.1), name="d")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss, logits

    return train


def batches(devices: int, seed: int = 2) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    rng = np.random.default_rng(seed)
    return [([rng.standard_normal((PER, IN)).astype(np.float32) for _ in range(devices)],
             [rng.integers(0, OUT, PER).astype(np.int32) for _ in range(devices)]) for _ in range(CALLS)]


def run(devices: int, monkeypatch, callgen: bool, replay: bool) -> dict:
    monkeypatch.setenv("FLOWLAB_CALLGEN", "1" if callgen else "0")
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    train = define(devices)
    out = []
    for i, (xs, ys) in enumerate(batches(devices)):
        loss, logits = train(xs, tuple(ys) if i % 2 else ys)  # a list or a tuple of arrays, as the general path
        assert type(loss) is list and len(loss) == devices
        out.append(([bits(p) for p in loss], bits(logits)))
    session = flow.default_session()
    return {"out": out, "state": protocol_state(session.runtime), "generated": dict(session.generated_calls),
            "variables": {k: bits(v) for k, v in flow.get_all_variables().items()}}


@pytest.mark.parametrize("devices", [1, 2, 3])
def test_list_numpy_arguments_run_through_the_generated_call_bit_for_bit_with_the_protocol(devices, monkeypatch):
    protocol = run(devices, monkeypatch, callgen=False, replay=False)
    fast = run(devices, monkeypatch, callgen=True, replay=True)
    assert protocol["generated"] == {}
    call = fast["generated"]["train"]
    assert call.runs >= CALLS - 2 * (FUSE_AFTER + 1), call.runs
    assert call.schedules and all(s.callgen == GENERATED for s in call.schedules)
    if devices > 1:
        assert f"in_x_0, in_x_1{', in_x_2' if devices == 3 else ''} = in_x" in call.source
        assert "concatenate((in_x_0, in_x_1" in call.source, call.source
    for key in ("out", "variables"):
        assert protocol[key] == fast[key], key
    assert protocol["state"] == fast["state"], "\n".join(differences(protocol["state"], fast["state"]))


def _error(train, xs, ys) -> str:
    with pytest.raises(JobArgumentError) as info:
        train(xs, ys)
    return str(info.value)


def test_bad_list_numpy_arguments_get_the_general_paths_errors_and_the_session_goes_on(monkeypatch):
    messages = {}
    for callgen in (False, True):
        monkeypatch.setenv("FLOWLAB_CALLGEN", "1" if callgen else "0")
        monkeypatch.setenv("FLOWLAB_REPLAY", "1")
        train = define(2)
        data = batches(2)
        for xs, ys in data[:CALLS - 2]:
            train(xs, ys)
        call = flow.default_session().generated_calls.get("train")
        assert (call is not None and call.runs > 0) == callgen
        runs = call.runs if call is not None else 0
        (x0, x1), ys = data[-1]
        messages[callgen] = [
            _error(train, [x0], ys),  # one array for two devices
            _error(train, [x0, x1, x0], ys),  # three
            _error(train, [x0, x1[:2]], ys),  # a piece of the wrong shape
            _error(train, [x0, x1.astype(np.float64)], ys),  # of the wrong dtype
            _error(train, np.concatenate([x0, x1]), ys),  # one array, not a list
        ]
        train([x0, x1], ys)  # the session goes on, through the generated call again
        if callgen:
            assert call.runs == runs + 1
    assert messages[True] == messages[False]
    assert "expected a list with one ndarray per device (2 device(s)); got a list of 1" in messages[True][0]
    assert "got a list of 3" in messages[True][1]
    assert "argument 'x[1]' must be a numpy.ndarray of shape (3, 4)" in messages[True][2]
    assert "shape (2, 4)" in messages[True][2]
    assert "got dtype float64" in messages[True][3]
    assert "got ndarray" in messages[True][4]


def test_a_list_numpy_argument_beside_a_numpy_one_is_the_protocol_bit_for_bit(monkeypatch):
    """A tp.Numpy placeholder (consistent, split by DistributeSplit) beside a tp.ListNumpy one."""

    def run_mixed(callgen: bool, replay: bool) -> dict:
        monkeypatch.setenv("FLOWLAB_CALLGEN", "1" if callgen else "0")
        monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
        flow.clear_default_session()
        flow.config.cpu_device_num(2)

        @flow.global_function(type="train")
        def train(z: tp.Numpy.Placeholder((2 * PER, IN)), x: tp.ListNumpy.Placeholder((PER, IN))) -> tp.ListNumpy:
            v = flow.get_variable("v", shape=(IN,), initializer=flow.constant_initializer(0.5))
            with flow.scope.mirrored_view():
                loss = flow.math.reduce_mean(flow.math.square(x + v)) + flow.math.reduce_mean(z * v)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
            return loss

        rng = np.random.default_rng(8)
        out = []
        for _ in range(CALLS):
            z = rng.standard_normal((2 * PER, IN)).astype(np.float32)
            out.append([bits(p) for p in train(z, list(rng.standard_normal((2, PER, IN)).astype(np.float32)))])
        session = flow.default_session()
        return {"out": out, "state": protocol_state(session.runtime), "generated": dict(session.generated_calls),
                "variables": {k: bits(v) for k, v in flow.get_all_variables().items()}}

    protocol, fast = run_mixed(False, False), run_mixed(True, True)
    assert fast["generated"]["train"].runs > 0 and "in_x = concatenate((in_x_0, in_x_1))" in fast["generated"][
        "train"].source
    for key in ("out", "variables"):
        assert protocol[key] == fast[key], key
    assert protocol["state"] == fast["state"], "\n".join(differences(protocol["state"], fast["state"]))
