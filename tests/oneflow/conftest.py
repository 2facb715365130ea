"""OneFlow's own tests draw their inputs from NumPy's global generator unseeded, so each run tests other numbers.
Some compare in float32 with a relative tolerance only, and a draw where two gradient terms nearly cancel fails them
by rounding alone (test_TripletMarginLoss failed 3 seeds of 60: 3.048e-05 against 3.042e-05). Each test here gets
its own fixed seed, from its node id, so a run is reproducible and a failure reruns the same numbers; the tests'
code stays OneFlow's."""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seeded_draws(request: pytest.FixtureRequest) -> None:
    seed = zlib.crc32(request.node.nodeid.encode())
    np.random.seed(seed)
    random.seed(seed)
