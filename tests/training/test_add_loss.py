"""flow.losses.add_loss: a marked loss joins the minimized one (its gradient adds, as OneFlow's
AddLossLogicalBlobName makes it another backward start), in either order with minimize(); outside a train job it
raises NotImplementedError as OneFlow's; a train job with add_loss and no optimizer is an error."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError


@pytest.mark.parametrize("before", [True, False])
def test_an_added_loss_adds_its_gradient(before):
    x = np.array([1.0, -2.0, 3.0])
    grads: list = []

    @flow.global_function(type="train")
    def two_losses(a: tp.Numpy.Placeholder((3,), dtype=flow.float64)) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), dtype=flow.float64, initializer=flow.ones_initializer())
        main = flow.math.reduce_sum(w * a)
        extra = flow.math.reduce_sum(w * w)
        opt = flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0)
        if before:
            flow.losses.add_loss(extra)
            opt.minimize(main)
        else:
            opt.minimize(main)
            flow.losses.add_loss(extra)
        flow.watch_diff(w, grads.append)
        return main

    two_losses(x)
    np.testing.assert_allclose(grads[0].numpy(), x + 2 * np.ones(3), rtol=1e-13)  # d(w.a + w.w)/dw at w = 1
    lr = float(np.float32(0.1))  # the learning rate is a float32 blob
    np.testing.assert_allclose(flow.get_all_variables()["w"], 1 - lr * (x + 2), rtol=1e-13)


def test_add_loss_outside_a_train_job_and_without_an_optimizer():
    with pytest.raises(NotImplementedError, match="outside a job function"):
        flow.losses.add_loss(None)

    @flow.global_function()
    def predict(a: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        flow.losses.add_loss(a)
        return a

    with pytest.raises(NotImplementedError, match="in the predict job 'predict'"):
        predict(np.zeros(3, np.float32))

    flow.clear_default_session()

    @flow.global_function(type="train")
    def no_optimizer(a: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), initializer=flow.ones_initializer())
        flow.losses.add_loss(flow.math.reduce_sum(w * a))
        return a

    with pytest.raises(OpInferError, match="marked losses with flow.losses.add_loss but has no optimizer"):
        no_optimizer(np.zeros(3, np.float32))


def test_losses_of_different_shapes_are_an_error():
    """OneFlow's ScaleModelDiffByLossInstanceNum CHECKs that the losses share one blob desc."""

    @flow.global_function(type="train")
    def mixed(a: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), initializer=flow.ones_initializer())
        opt = flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0)
        opt.minimize([w * a, flow.math.reduce_sum(w)])
        return a

    with pytest.raises(Exception, match="must have one shape"):
        mixed(np.zeros(3, np.float32))
