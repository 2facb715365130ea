"""gather with its params split on the gather axis (gather_op.cpp's {in: S(axis), indices: B} -> out: P): each
device gathers the indices that fall in its rows (zeros for the others), the partial sums add up to the gather.
A model-parallel embedding (a variable split on axis 0, as Wide & Deep's) predicts and trains on 2 devices as on
one; the kernels of every tier on a device's slice against NumPy (the CUDA one in the simulator)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.ir import BlobDesc, OpConf
from flowlab.ir.dtype import float32, int32
from flowlab.kernels import make_kernel

RNG = np.random.default_rng(12)


def _run(devices: int, table: np.ndarray, ids: np.ndarray, steps: int) -> tuple[list[np.ndarray], np.ndarray, str]:
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def embed(ids: tp.Numpy.Placeholder((6,), dtype=flow.int32, batch_axis=None)) -> tp.Numpy:
        emb = flow.get_variable("embedding", shape=table.shape, distribute=flow.distribute.split(0))
        out = flow.gather(emb, ids)
        loss = flow.math.reduce_sum(out * out)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return out

    flow.load_variables({"embedding": table})
    outs = [embed(ids) for _ in range(steps)]
    job = flow.default_session().job_set.job("embed")
    sig = next(str(s) for name, s in job.sbp_signatures.items() if name.startswith("gather"))
    after = flow.get_all_variables()["embedding"]
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    return outs, after, sig


def test_a_split_embedding_gathers_as_partial_sums_and_trains_as_on_one_device():
    table = RNG.standard_normal((5, 3)).astype(np.float32)
    ids = np.array([4, 0, 2, 2, 3, 1], np.int32)  # rows of both devices (rows 0-2 on device 0, 3-4 on device 1)
    one, w1, _ = _run(1, table, ids, 2)
    two, w2, sig = _run(2, table, ids, 2)
    assert sig == "{in_0: S(0), indices_0: B, out_0: P}"
    np.testing.assert_array_equal(one[0], table[ids])
    for a, b in zip(one, two):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    np.testing.assert_allclose(w2, w1, rtol=1e-6)


def _sliced_op(logical: int):
    op = OpConf("g", "gather", {"in": ("x/in_0",), "indices": ("x/indices_0",)}, {"out": ("g/out_0",)},
                {"axis": 1, "logical_axis_size": logical})
    return op


@pytest.mark.parametrize("impl", ["reference", "numba", "gpu"])
def test_each_tier_gathers_its_slice(impl):
    if impl == "gpu":
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
        from flowlab.kernels import cuda_available

        if not cuda_available():
            pytest.skip("no CUDA device or simulator")
    whole = RNG.standard_normal((2, 7, 3)).astype(np.float32)
    ids = np.array([[6, 0], [3, 4], [2, 5]], np.int32)
    total = np.zeros((2, 3, 2, 3), np.float32)
    bounds = [0, 3, 5, 7]  # balanced_split(7, 3)
    for pid in range(3):
        piece = np.ascontiguousarray(whole[:, bounds[pid]:bounds[pid + 1]])
        descs = [BlobDesc(piece.shape, float32), BlobDesc(ids.shape, int32)]
        out_desc = [BlobDesc((2, 3, 2, 3), float32)]
        out = np.full((2, 3, 2, 3), 7, np.float32)
        if impl == "gpu":
            from numba import cuda

            kernel = make_kernel(_sliced_op(7), descs, out_desc, device="gpu", parallel=(pid, 3))
            d_in, d_out = [cuda.to_device(piece), cuda.to_device(ids)], [cuda.to_device(out)]
            kernel(d_in, d_out, 0)
            out = d_out[0].copy_to_host()
        else:
            make_kernel(_sliced_op(7), descs, out_desc, impl, parallel=(pid, 3))([piece, ids], [out])
        total += out
    np.testing.assert_array_equal(total, np.take(whole, ids, axis=1))
    with pytest.raises(IndexError, match=r"index 7 .* out of range \[0, 7\) along axis 1 of 'in' \(shape "
                                         r"\(2, 7, 3\)\)"):
        bad = ids.copy()
        bad[1, 1] = 7
        if impl == "gpu":
            from numba import cuda

            kernel([cuda.to_device(piece), cuda.to_device(bad)], [cuda.to_device(out)], 0)
        else:
            make_kernel(_sliced_op(7), descs, out_desc, impl, parallel=(2, 3))([piece, bad], [out])
