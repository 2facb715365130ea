"""The two kernel modes agree on NaN and Inf for every op (issue 9, defect 6): a NaN must reach a NaN
breakpoint, not be swallowed by one mode's comparison. Each op's sample inputs get NaN, +inf or -inf at the
first, a middle or the last element of one data argument at a time, and both modes must give the same NaN
positions and the same values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from flowlab.ops.registry import get_op_def, registered_op_types

from .op_samples import SAMPLES, data_args, run_both, sample

USER_OPS = [t for t in registered_op_types() if not get_op_def(t).system]


def test_the_sample_table_covers_every_op_type():
    assert sorted(SAMPLES) == USER_OPS


def _cases():
    for op_type in USER_OPS:
        inputs, _ = sample(op_type, np.float32)
        for arg in data_args(op_type, inputs, np.float32):
            yield pytest.param(op_type, arg, id=f"{op_type}-{arg}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_type, arg", list(_cases()))
def test_both_modes_agree_on_nan_and_inf(op_type, arg, dtype):
    inputs, attrs = sample(op_type, dtype)
    for special in (np.nan, np.inf, -np.inf):
        for where in ("first", "middle", "last"):
            poked = {a: [x.copy() for x in arrays] for a, arrays in inputs.items()}
            flat = poked[arg][0].reshape(-1)
            flat[{"first": 0, "middle": flat.size // 2, "last": flat.size - 1}[where]] = special
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on inf - inf and the like
                ref = run_both(op_type, poked, attrs, "reference")
                got = run_both(op_type, poked, attrs, "numba")
            for i, (r, g) in enumerate(zip(ref, got)):
                np.testing.assert_allclose(g, r, rtol=2e-5, atol=1e-6, equal_nan=True,
                                           err_msg=f"{op_type}: {special} at the {where} of {arg!r}, output {i}")


def test_nan_reaches_the_output_of_relu_max_and_argmax():
    """The cases the issue names, against NumPy's semantics directly."""
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 0.0, -1.0], [-2.0, 5.0, np.nan]], np.float32)
    from .helpers import run_op

    for impl in ("reference", "numba"):
        np.testing.assert_array_equal(run_op("relu", {"x": [x]}, {}, impl)[0], np.maximum(x, 0))
        (m,) = run_op("reduce_max", {"input_tensor": [x]}, {"axis": 1, "keepdims": False}, impl)
        np.testing.assert_array_equal(m, [np.nan, np.nan, np.nan])
        np.testing.assert_array_equal(run_op("argmax", {"in": [x]}, {}, impl)[0], [1, 0, 2])
        inf_first = np.array([[np.inf, 1.0, 2.0]], np.float32)
        np.testing.assert_array_equal(run_op("reduce_sum", {"input_tensor": [inf_first]}, {"axis": 1}, impl)[0],
                                      [np.inf])
