"""The replay proof in the configuration a user runs (issue 25): no FLOWLAB_* variable set, so the tiered kernels
(a session's first call on the reference kernels, every later call on Numba's: kernels/tiered.py) and fused
segments compiled on a background thread, switching in at a call that depends on timing (replay/fused.py).
The suite runs that configuration too (tests/conftest.py), but tests/replay/test_replay_proof.py pins the compile into
the call (``fuse_in_call``); here both are unset explicitly, whatever the environment says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from flowlab.replay import fused
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import CALLS, assert_replayed_and_fused, assert_same, run


@pytest.fixture
def default_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FLOWLAB_KERNELS", "FLOWLAB_FUSE_BACKGROUND"):
        monkeypatch.delenv(name, raising=False)


def compiled_before(last: int, build: Callable[[list[np.ndarray]], Callable[[int], Any]]
                    ) -> Callable[[list[np.ndarray]], Callable[[int], Any]]:
    """The model, waiting for the background compiles before call ``last``: the calls from there run the compiled
    segments (and the generated call), the ones before whatever was ready."""

    def wrapped(watched: list[np.ndarray]) -> Callable[[int], Any]:
        call = build(watched)

        def one(k: int) -> Any:
            if k == last:
                fused.wait_compiled(300)
            return call(k)

        return one

    return wrapped


@pytest.mark.parametrize("model", sorted(MODELS))
def test_replayed_and_fused_calls_are_the_protocol_bit_for_bit_by_default(model: str, default_config: None,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = run(MODELS[model], False, CALLS, monkeypatch)
    replayed = run(compiled_before(CALLS - 3, MODELS[model]), True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    assert_same(protocol, replayed)
