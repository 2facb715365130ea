"""Consistent and mirrored views (oneflow-distributed.md §2.4, §5 mirrored_strategy.py)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler.sbp_infer import SbpInferError
from tests.helpers.sbp_jobs import job_set_of, sig


def mirrored_mlp(view_in_config: bool = True):
    """The docs' mirrored_strategy.py, smaller: ListNumpy placeholders of one device's batch, dense1/dense2."""
    flow.config.cpu_device_num(2)
    config = flow.function_config()
    config.default_data_type(flow.float)
    if view_in_config:
        config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train_job(images: tp.ListNumpy.Placeholder((4, 1, 2, 2)),
                  labels: tp.ListNumpy.Placeholder((4,), dtype=flow.int32)) -> tp.ListNumpy:
        reshape = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(reshape, 5, activation=flow.nn.relu, name="dense1")
        logits = flow.layers.dense(hidden, 3, name="dense2")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    images = [np.zeros((4, 1, 2, 2), np.float32)] * 2
    labels = [np.zeros((4,), np.int32)] * 2
    return job_set_of(lambda: train_job(images, labels))


def test_mirrored_view_marks_ops_and_their_signatures():
    job = mirrored_mlp().job("train_job")
    mirrored = set(job.mirrored_op_names)
    assert {"Input_0", "Input_1", "reshape_0", "dense1-matmul", "dense2-bias_add", "Return_0"} <= mirrored
    assert not any(job.op(n).op_type == "variable" for n in mirrored)  # variables are consistent in every view
    assert not any(n.endswith("_optimizer") for n in mirrored)
    assert sig(job, "Input_0") == {"out": "S(0)"}
    assert sig(job, "dense1-matmul") == {"a_0": "S(0)", "b_0": "B", "out_0": "S(0)"}  # the weight is cloned
    # each device's weight gradient is its batch's part: a partial sum the weight's DistributeClone's gradient
    # (OneFlow's DistributeAdd) hands the consistent update, which reduces it
    scaled = job.op(job.op("dense1-weight_optimizer").inputs["model_diff"][0].rpartition("/")[0])
    assert scaled.op_type == "broadcast_div"  # by the dynamic loss's instance count (test below)
    add = job.op(scaled.inputs["x"][0].rpartition("/")[0])
    assert add.op_type == "distribute_add" and add.name.endswith("_grad") and add.name in mirrored
    assert sig(job, add.name) == {"in": "P", "out": "P"}
    grad = add.input_lbns[0].rpartition("/")[0]
    assert grad in mirrored and list(sig(job, grad).values())[-1] == "P"
    assert " <mirrored>" in next(line for line in str(job).splitlines() if "%dense1-matmul/" in line)


def test_a_mirrored_loss_is_scaled_by_its_count_over_every_device():
    job = mirrored_mlp().job("train_job")
    # the loss is dynamic (ListNumpy): its instance count is counted at run time, each device its rows (S(0) -> P),
    # summed by the boxing before the division (OneFlow's ScaleModelDiffByDynamicLossInstanceNum); the update's
    # constant scale is then 1
    assert job.op("dense1-weight_optimizer").attrs["scale"] == 1.0
    (count,) = [op for op in job.ops if op.name.endswith("-LossInstanceNum")]
    assert count.op_type == "shape_elem_cnt" and count.attrs["include_axis"] == (0,)
    assert sig(job, count.name) == {"x_0": "S(0)", "y_0": "P"}


def test_the_scope_form_and_the_config_form_agree():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        y = flow.math.relu(x)  # consistent
        with flow.scope.mirrored_view():
            z = flow.math.square(y)
        with flow.scope.consistent_view():
            flow.identity(y)
        return z  # a mirrored blob's return is mirrored: tp.ListNumpy would give the pieces

    user = job_set_of(lambda: job(np.zeros((4, 3), np.float32))).job("job")
    split = "System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeSplit-0"  # OneFlow's name
    assert user.mirrored_op_names == (split, "square_0", "Return_0")
    assert sig(user, split) == {"in": "S(0)", "out": "S(0)"}  # a consistent S(0) blob split into pieces
    assert sig(user, "square_0") == {"x_0": "S(0)", "y_0": "S(0)"}


def test_a_mirrored_op_takes_only_broadcast_or_split0_consistent_blobs():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        y = flow.identity(x.with_distribute(flow.distribute.split(1)))
        with flow.scope.mirrored_view():
            return flow.math.relu(y)

    with pytest.raises(SbpInferError, match=r"test_sbp_views.py:\d+: mirrored op 'relu_0' \(relu\) takes consistent "
                                            r"blob 'identity_0/out_0', which lies S\(1\)"):
        job(np.zeros((4, 6), np.float32))


def test_a_consistent_op_cannot_take_a_mirrored_blobs_pieces():
    """Split pieces of a mirrored blob are not the slices of a consistent blob of its shape (OneFlow refuses too)."""
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.mirrored_view():
            z = flow.math.square(x)
        return flow.math.relu(z)

    with pytest.raises(SbpInferError, match=r"test_sbp_views.py:\d+: consistent op 'relu_0' \(relu\) takes mirrored "
                                            r"blob 'square_0/y_0', whose pieces lie S\(0\)"):
        job(np.zeros((4, 3), np.float32))


def test_on_one_device_mirrored_and_consistent_ops_mix_freely():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.mirrored_view():
            z = flow.math.square(x)
        return flow.math.relu(z - 1.0)

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    np.testing.assert_allclose(job(x), np.maximum(x * x - 1.0, 0), rtol=1e-6)
