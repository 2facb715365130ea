"""Weight decay in the CPU tiers' update kernels (reference, Numba) against NumPy transcriptions of OneFlow v0.3.4's
functors: the cases are tests/helpers/weight_decay_cases.py. Momentum put the decay into the momentum and RMSProp
applied
one; OneFlow's MomentumUpdateFunctor decays the weight beside the momentum and its RmsPropUpdateFunctor ignores
weight_decay."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.helpers import weight_decay_cases as cases
from tests.ops.helpers import run_op

IMPLS = pytest.mark.parametrize("impl", ["reference", "numba"])


def runner(impl: str) -> cases.Run:
    def run(op_type: str, ins: dict[str, list[np.ndarray]], attrs: dict[str, Any]) -> None:
        run_op(op_type, ins, attrs, impl)  # updates ins' arrays in place

    return run


@IMPLS
def test_sgd(impl: str) -> None:
    cases.check_sgd(runner(impl))


@IMPLS
def test_momentum_keeps_the_decay_out_of_the_momentum(impl: str) -> None:
    cases.check_momentum_keeps_the_decay_out_of_the_momentum(runner(impl))


@IMPLS
@pytest.mark.parametrize("correct", [False, True])
def test_adam(impl: str, correct: bool) -> None:
    cases.check_adam(runner(impl), correct)


@IMPLS
@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_ignores_weight_decay(impl: str, centered: bool) -> None:
    cases.check_rmsprop_ignores_weight_decay(runner(impl), centered)


@IMPLS
def test_lamb(impl: str) -> None:
    cases.check_lamb(runner(impl))
