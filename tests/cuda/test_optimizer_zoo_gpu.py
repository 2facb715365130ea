"""The optimizer options' CUDA kernels beyond the op samples against the NumPy reference, in Numba's CUDA simulator:
RMSProp(centered=True)'s (rmsprop_update with a mean_gradient) and indexed_slices_adam_update on a row-split table
(the op samples, tests/ops/op_samples.py, hold one invocation per op type)."""

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


def test_indexed_slices_adam_on_each_devices_rows_matches_the_reference():
    """A row-split table (S(0)): device i of 3 updates the ids in its rows only, as the reference kernel does."""
    from numba import cuda

    from flowlab.ir import BlobDesc, OpConf
    from flowlab.ir.dtype import float32, int32, int64

    rng = np.random.default_rng(6)
    bounds = [0, 3, 5, 7]  # balanced_split(7, 3)
    ids = np.array([6, 0, 3, 6, 4], np.int32)
    values = rng.standard_normal((5, 2)).astype(np.float32)
    attrs = {"weight_decay": 0.0, "scale": 1.0, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
             "do_bias_correction": True, "logical_rows": 7}
    op = OpConf("u", "indexed_slices_adam_update", {a: (f"x/{a}_0",) for a in (
        "model", "model_diff_indices", "model_diff_values", "learning_rate", "m", "v", "train_step")}, {}, attrs)
    for pid in range(3):
        rows = bounds[pid + 1] - bounds[pid]
        arrays = [rng.standard_normal((rows, 2)).astype(np.float32), ids, values, np.array([0.1], np.float32),
                  rng.standard_normal((rows, 2)).astype(np.float32), rng.uniform(0, 1, (rows, 2)).astype(np.float32),
                  np.array([1], np.int64)]
        descs = [BlobDesc(a.shape, {np.float32: float32, np.int32: int32, np.int64: int64}[a.dtype.type])
                 for a in arrays]
        want = [a.copy() for a in arrays]
        make_kernel(op, descs, [], "reference", parallel=(pid, 3))(want, [])
        dev = [cuda.to_device(a) for a in arrays]
        make_kernel(op, descs, [], device="gpu", parallel=(pid, 3))(dev, [], 0)
        for i in (0, 4, 5):
            np.testing.assert_allclose(dev[i].copy_to_host(), want[i], rtol=2e-6, atol=2e-7)
        assert not np.array_equal(want[0], arrays[0])  # every device has an id in its rows here
