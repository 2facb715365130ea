"""The replay proof's harness (tests/replay/test_replay_proof.py and the tests that prove other models the same way):
run a model's calls with replay on or off, and compare the results and the protocol state bit for bit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import flowlab as flow
from flowlab.replay.state import differences, protocol_state

CALLS = 12  # past fusion: the FUSE_AFTER-th replay of a schedule fuses it


LONG = 32  # more than the 25 calls that take the wait-ids source's 100 registers round (4 sections a call)


def run(build: Callable[[list[np.ndarray]], Callable[[int], list[np.ndarray]]], replay: bool, calls: int,
        monkeypatch: pytest.MonkeyPatch, snapshot_at: frozenset[int] = frozenset(), devices: int = 1
        ) -> dict[str, Any]:
    """``calls`` calls of a model in a fresh session on ``devices`` CPU devices (a cleared session starts from the
    default flow.config); protocol states after the calls in ``snapshot_at`` (each settles what was replayed so
    far) and at the end (after any number of unsettled replays)."""
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    watched: list[np.ndarray] = []
    call = build(watched)
    outputs, states = [], []
    for k in range(calls):
        outputs.append(call(k))
        if k in snapshot_at:
            states.append(protocol_state(flow.default_session().runtime))
    session = flow.default_session()
    rt = session.runtime
    return {"outputs": outputs, "watched": watched, "variables": flow.get_all_variables(), "states": states,
            "state": protocol_state(rt), "layer": rt.layer, "generated": dict(session.generated_calls)}


def bits(a: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    a = np.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def assert_same(protocol: dict[str, Any], replayed: dict[str, Any]) -> None:
    """Bit for bit: returns, watched values, variables, protocol states."""
    assert len(protocol["outputs"]) == len(replayed["outputs"])
    for k, (a, b) in enumerate(zip(protocol["outputs"], replayed["outputs"])):
        assert [bits(x) for x in a] == [bits(x) for x in b], f"call {k} returned other values"
    assert len(protocol["watched"]) == len(replayed["watched"]) > 0
    for k, (a, b) in enumerate(zip(protocol["watched"], replayed["watched"])):
        assert bits(a) == bits(b), f"watched value {k} differs"
    assert protocol["variables"].keys() == replayed["variables"].keys()
    for name, value in protocol["variables"].items():
        assert bits(value) == bits(replayed["variables"][name]), f"variable {name} differs"
    for k, (a, b) in enumerate(zip(protocol["states"] + [protocol["state"]], replayed["states"] + [replayed["state"]])):
        assert a == b, f"protocol state {k} differs:\n" + "\n".join(differences(a, b))


def assert_replayed_and_fused(result: dict[str, Any], main_key: str, calls: int = CALLS) -> None:
    layer = result["layer"]
    # the protocol ran the first call of each launch list (model init, train, eval, a checkpoint's save and load),
    # captured it, and every later call was replayed
    assert layer.protocol_calls == len(layer.schedules), layer
    assert layer.replays >= calls - 3, layer
    fused = [s for s in layer.schedules.values() if s.fused is not None and any(main_key in n for n in s.key)]
    assert fused, f"no schedule of {main_key} was fused: {list(layer.schedules.values())}"
    # and the calls after that were run by the generated call (replay/callgen.py), not the layer's general path
    ran = {name: call.runs for name, call in result["generated"].items()}
    assert any(main_key in name and runs > 0 for name, runs in ran.items()), (ran, [s.callgen for s in fused])
