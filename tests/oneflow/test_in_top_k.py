"""OneFlow v0.3.4 oneflow/python/test/ops/test_in_top_k.py, ported: "gpu" -> "cpu"; TensorFlow's in_top_k ->
NumPy. Its placeholders are larger than its inputs (dynamic blobs), and of different batch sizes."""

from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

import flowlab as flow
import flowlab.typing as tp

from .of_util import GenArgList, TestCase, type_name_to_flow_type, type_name_to_np_type


def _np_in_top_k(targets, predictions, k):
    """TensorFlow's in_top_k: the target's prediction has fewer than k larger ones (ties count in); a row with a
    non-finite prediction is False."""
    n = predictions.shape[0]
    target_pred = predictions[np.arange(n), targets]
    above = np.sum(predictions > target_pred[:, None], axis=1)
    return np.all(np.isfinite(predictions), axis=1) & (above < k)


tf = SimpleNamespace(math=SimpleNamespace(in_top_k=_np_in_top_k))


def compare_with_tensorflow(
    device_type, target_dtype, predictions_shape, k, with_finite=False
):
    assert device_type in ["cpu"]
    assert target_dtype in ["int32", "int64"]

    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())
    func_config.default_data_type(flow.float)

    instance_num = predictions_shape[0]
    classes = predictions_shape[1]
    targets = np.random.randint(classes, size=instance_num).astype(
        type_name_to_np_type[target_dtype]
    )
    predictions = np.random.rand(*predictions_shape).astype("float32")
    if with_finite:
        predictions[np.random.randint(instance_num)][
            np.random.randint(classes)
        ] = float("inf")

    @flow.global_function(function_config=func_config)
    def IntopkJob(
        targets: tp.ListNumpy.Placeholder(
            (instance_num + 10,), dtype=type_name_to_flow_type[target_dtype]
        ),
        predictions: tp.ListNumpy.Placeholder(
            tuple([dim + 5 for dim in predictions_shape]), dtype=flow.float
        ),
    ):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.in_top_k(targets, predictions, k=k)

    # OneFlow
    of_out = IntopkJob([targets], [predictions]).get().numpy_list()[0]
    # TensorFlow
    tf_out = tf.math.in_top_k(targets, predictions, k=k)
    assert np.array_equal(of_out, tf_out)


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["target_dtype"] = ["int32", "int64"]
    arg_dict["predictions_shape"] = [(10, 5)]
    arg_dict["k"] = [1, 2, 3, 4, 5]
    arg_dict["with_finite"] = [False, True]
    return GenArgList(arg_dict)


def test_in_top_K():
    test_case = TestCase()
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)

