"""Weight decay in the CUDA update kernels (Numba's simulator here; a GPU with NUMBA_ENABLE_CUDASIM=0) against
NumPy transcriptions of OneFlow v0.3.4's functors: the cases are tests/helpers/weight_decay_cases.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from flowlab.kernels import make_kernel
from tests.helpers import weight_decay_cases as cases

from .helpers import _op


def run_gpu(op_type: str, ins: dict[str, list[np.ndarray]], attrs: dict[str, Any]) -> None:
    """One act of the CUDA kernel on device copies of every input, copied back into ``ins`` (the updates write
    their inputs in place)."""
    from numba import cuda

    op_def, op, in_descs, out_descs = _op(op_type, ins, attrs)
    host = [a for arg in op_def.inputs for a in ins.get(arg, [])]
    stream = cuda.stream()
    dev = [cuda.to_device(np.ascontiguousarray(a), stream=stream) for a in host]
    outs = [cuda.to_device(np.zeros(d.shape, d.dtype.np), stream=stream) for d in out_descs]
    make_kernel(op, in_descs, out_descs, device="gpu")(dev, outs, stream)
    for a, d in zip(host, dev):
        a[...] = d.copy_to_host(stream=stream)
    stream.synchronize()


def test_sgd() -> None:
    cases.check_sgd(run_gpu)


def test_momentum_keeps_the_decay_out_of_the_momentum() -> None:
    cases.check_momentum_keeps_the_decay_out_of_the_momentum(run_gpu)


@pytest.mark.parametrize("correct", [False, True])
def test_adam(correct: bool) -> None:
    cases.check_adam(run_gpu, correct)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_ignores_weight_decay(centered: bool) -> None:
    cases.check_rmsprop_ignores_weight_decay(run_gpu, centered)


def test_lamb() -> None:
    cases.check_lamb(run_gpu)
