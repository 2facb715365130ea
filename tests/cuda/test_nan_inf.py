"""The CUDA kernels agree with the reference on NaN and Inf, as the CPU modes do (tests/ops/
test_kernel_nan_agreement.py): the GPU must not swallow a NaN in a comparison, and the simulator must give the
GPU's IEEE results where Python's math would raise (math.exp(1000.0), math.log(0.0), math.sqrt(-1.0)). Each data
argument of each op's sample gets NaN at its first element, +inf in the middle and -inf at the end, in one run
(and the reverse order in a second), float32, 8-thread blocks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from flowlab.kernels.numba_cuda import launch_config
from tests.ops.op_samples import SAMPLES, data_args, sample

from .helpers import run


def _cases():
    for op_type in sorted(SAMPLES):
        inputs, _ = sample(op_type, np.float32)
        for arg in data_args(op_type, inputs, np.float32):
            yield pytest.param(op_type, arg, id=f"{op_type}-{arg}")


@pytest.mark.parametrize("op_type, arg", list(_cases()))
def test_cuda_kernels_agree_with_the_reference_on_nan_and_inf(op_type, arg):
    inputs, attrs = sample(op_type, np.float32)
    for specials in ((np.nan, np.inf, -np.inf), (-np.inf, np.nan, np.inf)):
        poked = {a: [x.copy() for x in arrays] for a, arrays in inputs.items()}
        flat = poked[arg][0].reshape(-1)
        for value, at in zip(specials, (0, flat.size // 2, flat.size - 1)):
            flat[at] = value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf and the like, on both sides
            expected = run(op_type, poked, attrs, "cpu")
            with launch_config(threads=8, tile=4, tile_k=4, micro=2):
                got = run(op_type, poked, attrs, "gpu")
        for i, (g, e) in enumerate(zip(got, expected)):
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-6, equal_nan=True,
                                       err_msg=f"{op_type}: {specials} poked into {arg!r}, output {i}")


def test_inference_batch_norm_with_broken_moving_statistics():
    """Inference normalizes by the moving variance as given: a negative or -inf one gives NaN, a zero with
    epsilon 0 gives inf (Python's math.sqrt and 1 / 0.0 would raise in the simulator)."""
    rng = np.random.default_rng(3)
    inputs = {"x": [rng.standard_normal((2, 4, 3)).astype(np.float32)],
              "moving_mean": [np.zeros(4, np.float32)],
              "moving_variance": [np.array([1.0, -2.0, -np.inf, 0.0], np.float32)],
              "gamma": [np.ones(4, np.float32)], "beta": [np.zeros(4, np.float32)]}
    attrs = {"axis": 1, "training": False, "epsilon": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = run("normalization", inputs, attrs, "cpu")
        with launch_config(threads=8):
            got = run("normalization", inputs, attrs, "gpu")
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-6, equal_nan=True)
    assert np.isinf(got[2][3]) and np.isnan(got[2][1:3]).all()
