"""The Numba learning-rate and assign kernels (kernels/numba_cpu/schedule.py) against the reference kernels, and
the constants the fusion codegen writes for them."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from flowlab.kernels.numba_cpu.schedule import _learning_rate, schedule_constants
from flowlab.kernels.reference.optimizer import learning_rate
from flowlab.replay.fused import _Codegen

DECAYS = [
    None,
    {"type": "piecewise_constant", "boundaries": [3, 7], "values": [0.1, 0.01, 0.001]},
    {"type": "piecewise_constant", "boundaries": [], "values": [0.3]},
    {"type": "polynomial", "decay_batches": 5, "end_learning_rate": 0.001, "power": 2.0, "cycle": False},
    {"type": "polynomial", "decay_batches": 5, "end_learning_rate": 0.001, "power": 1.0, "cycle": True},
    {"type": "cosine", "decay_batches": 6, "alpha": 0.1},
    {"type": "linear_cosine", "decay_batches": 6, "num_periods": 0.5, "alpha": 0.0, "beta": 0.001},
    {"type": "piecewise_scaling", "boundaries": [3, 7], "scales": [1.0, 0.5, 0.1]},
    {"type": "exponential", "decay_batches": 4, "decay_rate": 0.5, "staircase": True},
    {"type": "inverse_time", "decay_batches": 3, "decay_rate": 0.9, "staircase": False},
    {"type": "natural_exp", "decay_batches": 5, "decay_rate": 0.3, "staircase": False},
]
WARMUPS = [None, {"type": "linear", "warmup_batches": 3, "start_multiplier": 0.2},
           {"type": "constant", "warmup_batches": 2, "multiplier": 0.5}]


@pytest.mark.parametrize(("decay", "warmup"), list(itertools.product(DECAYS, WARMUPS)),
                         ids=lambda v: v["type"] if v else "none")
def test_numba_learning_rate_matches_the_reference_at_every_step(decay: dict | None, warmup: dict | None) -> None:
    constants = schedule_constants(0.1, decay, warmup)
    assert constants is not None
    for step in range(20):  # across the warmup, the boundaries, the decay's end and a polynomial cycle
        expected = learning_rate(0.1, step, decay, warmup)
        got = _learning_rate(np.int64(step), *constants)
        assert np.float32(got) == np.float32(expected), (step, got, expected)


def test_an_unknown_schedule_has_no_numba_constants() -> None:
    assert schedule_constants(0.1, {"type": "cubic_spline"}, None) is None
    assert schedule_constants(0.1, None, {"type": "cubic", "warmup_batches": 2}) is None


def test_codegen_writes_tuples_and_non_finite_floats_as_source() -> None:
    gen = _Codegen([])
    assert gen.constant((math.inf, 0.5)) == "(np.inf, 0.5,)"
    assert gen.constant(-math.inf) == "-np.inf"
    assert gen.constant(np.float32(math.nan)) == "np.float32(np.nan)"
    assert eval(gen.constant((0.1,)), {"np": np}) == (0.1,)  # the source the segment holds
