"""RMSProp(centered=True)'s CUDA kernel (rmsprop_update with a mean_gradient) against the NumPy reference, in
Numba's CUDA simulator (the op samples, tests/ops/op_samples.py, hold one invocation per op type: the plain one)."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.kernels import make_kernel

from .helpers import _op

ARGS = ("model", "model_diff", "mean_square", "learning_rate", "mean_gradient")


def _run(inputs: dict[str, list[np.ndarray]], attrs: dict, device: str) -> list[np.ndarray]:
    """The arrays after one act (the update writes model, mean_square and mean_gradient in place)."""
    from numba import cuda

    _op_def, op, in_descs, out_descs = _op("rmsprop_update", inputs, attrs)
    host = [inputs[arg][0].copy() for arg in ARGS]
    if device == "cpu":
        make_kernel(op, in_descs, out_descs, "reference")(host, [])
        return host
    stream = cuda.stream()
    dev = [cuda.to_device(a, stream=stream) for a in host]
    make_kernel(op, in_descs, out_descs, device="gpu")(dev, [], stream)
    out = [d.copy_to_host(stream=stream) for d in dev]
    stream.synchronize()
    return out


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_centered_rmsprop_update_matches_the_reference(dt):
    rng = np.random.default_rng(4)
    inputs = {"model": [rng.standard_normal((5, 3)).astype(dt)],
              "model_diff": [rng.standard_normal((5, 3)).astype(dt)],
              "mean_square": [rng.uniform(1, 2, (5, 3)).astype(dt)],
              "learning_rate": [np.array([0.1], np.float32)],
              "mean_gradient": [rng.uniform(-0.5, 0.5, (5, 3)).astype(dt)]}
    attrs = {"centered": True, "decay_rate": 0.9, "epsilon": 1e-6, "scale": 0.5}
    got, want = _run(inputs, attrs, "gpu"), _run(inputs, attrs, "cpu")
    rtol = 2e-6 if dt is np.float32 else 1e-13
    for name, g, w, before in zip(ARGS, got, want, (inputs[a][0] for a in ARGS)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=name)
        if name in ("model", "mean_square", "mean_gradient"):
            assert not np.array_equal(w, before), name  # the reference did write it
