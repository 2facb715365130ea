"""The proof that the replay layer (flowlab/replay/) is an optimisation of the protocol, not a second way of running.

Every training model of the test suite (tests/helpers/replay_models.py) runs the same calls in a session with the layer
(replayed and fused) and in one without it (FLOWLAB_REPLAY=0: the protocol alone), and the two must agree bit
for bit: every returned array, every watched and watch_diff value, every variable, and the whole protocol state
(``protocol_state``: every actor's and register's counters, which registers are where, the main job's ids,
buffers, the act count, every memory block's bytes). Each run passes fusion and is checked to have replayed every
call after the first of each launch list, and to have run the fused calls through the generated call.
"""

from __future__ import annotations

import pytest

from flowlab.replay.state import differences, protocol_state
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import CALLS, LONG, assert_replayed_and_fused, assert_same, run

# the compiled segment (and the generated call) must run by a given call: compiled in the call that fuses
pytestmark = pytest.mark.usefixtures("fuse_in_call")


@pytest.mark.parametrize("model", sorted(MODELS))
def test_replayed_and_fused_calls_are_the_protocol_bit_for_bit(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = run(MODELS[model], False, CALLS, monkeypatch)
    assert protocol["layer"] is None
    replayed = run(MODELS[model], True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    assert_same(protocol, replayed)


def test_the_protocol_state_is_the_same_after_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settled after each call (one replay at a time), and after a run of more replays than the wait-ids source has
    registers (their rotation settled in one pass)."""
    some = frozenset(range(CALLS))
    protocol = run(MODELS["mlp_sgd_momentum"], False, LONG + CALLS, monkeypatch, some)
    replayed = run(MODELS["mlp_sgd_momentum"], True, LONG + CALLS, monkeypatch, some)
    assert_replayed_and_fused(replayed, "train", LONG + CALLS)
    assert len(replayed["states"]) == CALLS
    assert_same(protocol, replayed)


def test_the_snapshot_sees_what_a_replay_leaves_unsettled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The proof's own check: the snapshot of a settled replayed runtime is the protocol's, and one act id off is a
    difference it shows (a snapshot blind to counters would pass a settle that did nothing)."""
    protocol = run(MODELS["mlp_sgd_momentum"], False, 12, monkeypatch)
    replayed = run(MODELS["mlp_sgd_momentum"], True, 12, monkeypatch)
    layer = replayed["layer"]
    assert layer.replays > 0
    rt = layer.rt
    rt.observe()  # settles: the states agree ...
    assert protocol_state(rt) == protocol["state"]
    rt.actors[next(iter(rt.actors))].act_id += 1  # ... and one act id off is a difference the snapshot shows
    assert any("act_id" in line for line in differences(protocol["state"], protocol_state(rt)))
