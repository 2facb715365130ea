"""OneFlow v0.3.4 oneflow/python/test/ops/test_sparse_cross_entropy.py, ported: the program as written, "gpu"
placements on "cpu" (4 CPU devices for the split prediction); TensorFlow's sparse_softmax_cross_entropy_with_logits
and its tape gradient -> NumPy float64 (loss = square(-log softmax(x)[label]); dx = dloss * 2 * xent * (softmax(x) -
onehot))."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, TestCase, test_global_storage, type_name_to_flow_type, type_name_to_np_type


def compare_with_tensorflow(
    device_type, data_type, label_type, num_classes, batch_size
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def SparseSoftmaxCrossEntropyWithLogitsJob(
        labels: oft.Numpy.Placeholder(
            (batch_size,), dtype=type_name_to_flow_type[label_type]
        )
    ):
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "x",
                shape=(batch_size, num_classes),
                dtype=type_name_to_flow_type[data_type],
                initializer=flow.random_uniform_initializer(minval=-10, maxval=10),
                trainable=True,
            )
            prediction = flow.nn.softmax(logits=x)
            loss = flow.nn.sparse_cross_entropy(labels=labels, prediction=prediction)
            loss = flow.math.square(loss)
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)

            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
        return loss

    # fake labels
    labels = np.random.randint(0, num_classes, size=(batch_size,)).astype(
        type_name_to_np_type[label_type]
    )

    # OneFlow
    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = SparseSoftmaxCrossEntropyWithLogitsJob(labels).get()

    # NumPy float64 (for TensorFlow)
    x = test_global_storage.Get("x").astype(np.float64)
    shifted = x - x.max(-1, keepdims=True)
    p = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
    rows = np.arange(batch_size)
    xent = np.log(np.exp(shifted).sum(-1)) - shifted[rows, labels]
    onehot = np.zeros_like(x)
    onehot[rows, labels] = 1
    ref_dx = (test_global_storage.Get("loss_diff") * 2 * xent)[:, None] * (p - onehot)
    assert np.allclose(of_out.numpy(), xent * xent, rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=1e-5, atol=1e-5)
    flow.clear_default_session()


def test_sparse_cross_entropy_with_logits():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["data_type"] = ["float32", "double"]
    arg_dict["label_type"] = ["int32", "int64"]
    arg_dict["num_classes"] = [1000]
    arg_dict["batch_size"] = [64]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)


