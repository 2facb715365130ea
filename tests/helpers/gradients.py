"""Gradient checks against finite differences: flowlab's gradients of a job's inputs (``flowlab_grads``) and ``check``
comparing them with central differences in float64."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

import flowlab as flow
import flowlab.typing as tp

RNG = np.random.default_rng(42)


F64 = flow.float64


def flowlab_grads(variables: dict[str, np.ndarray], build: Callable, feeds: dict[str, np.ndarray]) -> dict:
    names = list(feeds)

    def job(*args):
        blobs = {n: flow.get_variable(n, shape=v.shape, dtype=F64) for n, v in variables.items()}
        y = build(blobs, dict(zip(names, args)))
        weight = args[-1]
        loss = flow.math.reduce_sum(y * weight)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return loss

    def placeholder(a: np.ndarray) -> tp.FixedTensorDef:
        return tp.Numpy.Placeholder(a.shape, dtype=flow.float64 if a.dtype == np.float64 else flow.int32)

    # One positional parameter per feed (flowlab rejects *args, as OneFlow does).
    job.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=placeholder(a))
         for n, a in feeds.items()], return_annotation=tp.Numpy)
    job.__name__ = "grad_job"
    train = flow.global_function(type="train")(job)
    flow.load_variables(variables)
    train(*feeds.values())
    after = flow.get_all_variables()
    return {n: variables[n] - after[n] for n in variables}


def numeric_grads(variables: dict[str, np.ndarray], forward: Callable, feeds: dict[str, np.ndarray],
                  eps: float = 1e-6) -> dict:
    out = {}
    for name, value in variables.items():
        grad = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            for sign in (1, -1):
                shifted = {**variables, name: value.copy()}
                shifted[name][idx] += sign * eps
                grad[idx] += sign * np.sum(forward(shifted, feeds) * feeds["weight"]) / (2 * eps)
        out[name] = grad
    return out


def check(variables, build, forward, feeds, shape_out, rtol=1e-6, atol=1e-8):
    feeds = {**feeds, "weight": RNG.standard_normal(shape_out)}
    got = flowlab_grads(variables, build, feeds)
    want = numeric_grads(variables, forward, feeds)
    for name in variables:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


def v(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape)
