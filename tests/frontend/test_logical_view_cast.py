"""``flow.cast_to_current_logical_view(x)`` (OneFlow's python/advanced/distribute_ops.py): an identity op traced in
the current view when ``x`` belongs to the other one, ``x`` itself otherwise.

A consistent blob cast in the mirrored view becomes per-device pieces (a variable: cloned, B; its gradient comes
back as the devices' partial sums); a mirrored blob made from per-device data cast in the consistent view is the
consistent blob of its pieces concatenated on axis 0 (OneFlow: a mirrored blob's consistent view is S(0))."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler.sbp_infer import SbpInferError


def _mirrored_config() -> flow.FunctionConfig:
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    return config


def test_a_blob_already_in_the_current_view_is_returned_as_is():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    seen = {}

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3)), p: tp.ListNumpy.Placeholder((2, 3))) -> tp.Numpy:
        seen["consistent"] = flow.cast_to_current_logical_view(x) is x
        with flow.scope.mirrored_view():
            seen["mirrored"] = flow.cast_to_current_logical_view(p) is p
        return x

    job(np.zeros((4, 3), np.float32), [np.zeros((2, 3), np.float32)] * 2)
    assert seen == {"consistent": True, "mirrored": True}
    user = flow.default_session().job_set.job("job")
    assert not any(op.op_type == "identity" for op in user.ops)


def test_a_variable_cast_into_the_mirrored_view_trains_as_one_device_on_the_whole_batch():
    """OneFlow's op tests: ``v = flow.cast_to_current_logical_view(v); y = x + v`` with ListNumpy inputs. Each
    device adds its clone of v; the mirrored loss counts every device's rows (it is dynamic), and v's gradient sums
    both devices' parts: one-device SGD on the whole batch."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train", function_config=_mirrored_config())
    def train(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        v = flow.get_variable("v", shape=(3,), initializer=flow.zeros_initializer())
        v = flow.cast_to_current_logical_view(v)
        loss = flow.math.square(x + v)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    pieces = train([x[:2], x[2:]])
    np.testing.assert_allclose(np.concatenate(pieces), x ** 2, rtol=1e-6)
    # d/dv of sum((x + v)^2) at v = 0 over the loss's instances: the loss is dynamic (ListNumpy), so OneFlow divides
    # by its rows on every device, 4 (autograd.cpp ScaleModelDiffByDynamicLossInstanceNum), not its 12 elements
    want = -0.5 * 2 * x.sum(0) / len(x)
    np.testing.assert_allclose(flow.get_all_variables()["v"], want, rtol=1e-5)
    user = flow.default_session().job_set.job("train")
    # the mirrored identity reads v through OneFlow's DistributeClone (one whole copy per device)
    (clone,) = [op for op in user.ops if op.op_type == "distribute_clone" and op.inputs["in"] == ("v/out",)]
    (cast,) = [op for op in user.ops if op.op_type == "identity" and op.inputs["in"] == clone.output_lbns]
    assert cast.name in user.mirrored_op_names
    assert str(user.sbp_signatures[cast.name]) == "{in_0: B, out_0: B}"


def test_a_mirrored_blob_cast_into_the_consistent_view_is_its_pieces_concatenated():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    shapes = {}

    @flow.global_function()
    def job(p: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:  # dynamic: not tp.Numpy (OneFlow's rule)
        with flow.scope.mirrored_view():
            doubled = p * 2.0
        whole = flow.cast_to_current_logical_view(doubled)
        shapes["whole"] = whole.shape
        return flow.math.reduce_sum(whole, axis=1)  # a consistent op over the logical (4, 3) blob

    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), -np.ones((2, 3), np.float32)
    (out,) = job([a, b])
    assert shapes["whole"] == (4, 3)
    np.testing.assert_allclose(out, np.concatenate([a, b]).sum(1) * 2)
    user = flow.default_session().job_set.job("job")
    (cast,) = [op for op in user.ops if op.op_type == "identity"]
    assert cast.name not in user.mirrored_op_names
    assert str(user.sbp_signatures[cast.name]) == "{in_0: S(0), out_0: S(0)}"


def test_a_consistent_op_on_split_mirrored_pieces_points_at_the_cast():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(p: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        return flow.math.reduce_sum(p, axis=1)

    with pytest.raises(SbpInferError, match="cast_to_current_logical_view") as err:
        job([np.zeros((2, 3), np.float32)] * 2)
    assert "test_logical_view_cast.py" in str(err.value)


def test_cast_takes_a_blob():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        flow.cast_to_current_logical_view(np.zeros(2))
        return x

    with pytest.raises(TypeError, match="cast_to_current_logical_view"):
        job(np.zeros(2, np.float32))
