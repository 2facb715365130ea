"""Running an op on the CPU and the GPU and comparing (the CUDA edge-case tests)."""

from __future__ import annotations

import numpy as np

from flowlab.kernels.numba_cuda import launch_config
from tests.cuda.helpers import run


def both(op_type, inputs, attrs, **launch):
    with launch_config(**launch):
        got = run(op_type, inputs, attrs, "gpu")
    return got, run(op_type, inputs, attrs, "cpu")


def close(got, expected, rtol=2e-5, atol=2e-6):
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
