"""add_op hands kernels their inputs in the op's declared order, whatever order the caller's dict has: kernels take
inputs by position, so a dict given out of order (or an optional input put early) shifted every index after it.
compiler/optimizer_ops.py used to reorder rmsprop's inputs itself (its optional mean_gradient came before the
learning rate); the builder now does it for every op."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from flowlab.frontend.builder import add_op, current_builder

A = np.array([[5.0, 7.0, -1.0]], np.float32)
B = np.array([[1.0, 2.0, 3.0]], np.float32)


def test_inputs_given_out_of_order_reach_the_kernel_in_the_declared_order():
    flow.clear_default_session()

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((1, 3)), b: tp.Numpy.Placeholder((1, 3))) -> tp.Numpy:
        (z,) = add_op("broadcast_sub", {"y": [b], "x": [a]})  # x - y, y given first
        return z

    np.testing.assert_array_equal(job(A, B), A - B)  # was B - A


def test_an_optional_input_given_early_keeps_the_declared_order():
    flow.clear_default_session()
    seen = {}

    @flow.global_function()
    def job(g: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        w, ms, mg = (flow.get_variable(n, shape=(3,), initializer=flow.constant_initializer(v))
                     for n, v in (("w", 1.0), ("ms", 0.5), ("mg", 0.25)))
        lr = flow.constant(0.1, shape=(1,), dtype=flow.float32)
        add_op("rmsprop_update", {"mean_gradient": [mg], "learning_rate": [lr], "model": [w], "model_diff": [g],
                                  "mean_square": [ms]}, {"centered": True, "decay_rate": 0.9, "epsilon": 1e-3},
               name="update")
        seen["inputs"] = tuple(next(op for op in current_builder().ops if op.name == "update").inputs)
        return flow.math.reduce_sum(g)

    g = np.array([1.0, -2.0, 0.5], np.float32)
    job(g)
    assert seen["inputs"] == ("model", "model_diff", "mean_square", "learning_rate", "mean_gradient")
    # OneFlow's RmsPropUpdateFunctor (centered): ms' = d ms + (1-d) g^2, mg' = d mg + (1-d) g,
    # w -= lr g / sqrt(ms' - mg'^2 + eps)
    d, eps, lr = 0.9, 1e-3, np.float32(0.1)
    ms = d * 0.5 + (1 - d) * g.astype(np.float64) ** 2
    mg = d * 0.25 + (1 - d) * g.astype(np.float64)
    want = 1.0 - float(lr) * g / np.sqrt(ms - mg * mg + eps)
    variables = flow.get_all_variables()
    np.testing.assert_allclose(variables["w"], want, rtol=1e-5)
    np.testing.assert_allclose(variables["mg"], mg, rtol=1e-6)
