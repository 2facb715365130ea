"""An integer loss (OneFlow v0.3.4's test_tril / test_fused_scale_tril / test_masked_fill integer legs): as OneFlow's
autograd, backpropagation starts from ones of the loss's dtype (constant_like), runs in integers down to the cast
from the float variable, and the variable trains on that gradient (scaled by the loss's element count)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp


@pytest.mark.parametrize("dtype", [flow.int32, flow.int64])
def test_an_integer_loss_trains_the_float_variable_behind_its_cast(dtype):
    flow.clear_default_session()
    diffs: dict = {}

    @flow.global_function(type="train")
    def int_loss(x: tp.Numpy.Placeholder((3, 4), dtype=dtype)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(1,), dtype=flow.float, initializer=flow.zeros_initializer())
        y = x + flow.cast(v, dtype=dtype)
        out = flow.math.tril(y, 0) * 3
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(out)
        flow.watch_diff(y, lambda d: diffs.setdefault("y", d.numpy()))
        return out

    x = np.arange(12).reshape(3, 4)
    out = int_loss(x.astype(np.int32 if dtype == flow.int32 else np.int64))
    np.testing.assert_array_equal(out, np.tril(x) * 3)
    assert diffs["y"].dtype == out.dtype
    np.testing.assert_array_equal(diffs["y"], np.tril(np.full((3, 4), 3)))  # integer gradient: 3 where kept
    # dv = the sum of y's gradient (cast's gradient back to float), over the loss's 12 elements; lr 0.5
    np.testing.assert_allclose(flow.get_all_variables()["v"], [-0.5 * 3 * 6 / 12], rtol=1e-7)
