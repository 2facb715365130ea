"""OneFlow v0.3.4 oneflow/python/test/ops/test_interface_op_read_and_write.py, ported: "gpu" -> "cpu"
(gpu_device_num(2) -> cpu_device_num(2)); no TensorFlow in it."""

import numpy as np

import flowlab as flow
import flowlab.typing as tp

from .of_util import TestCase


def test():
    test_case = TestCase()
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    if flow.eager_execution_enabled():
        print("\nSkip under erger mode!")
        return

    @flow.global_function()
    def add() -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            x = flow.get_variable(
                name="x",
                shape=(2, 3),
                initializer=flow.random_uniform_initializer(),
            )
            y = flow.get_variable(
                name="y",
                shape=(2, 3),
                initializer=flow.random_uniform_initializer(),
            )
            return flow.math.add_n([x, y])

    check_point = flow.train.CheckPoint()
    check_point.init()
    x_value = np.random.random((2, 3)).astype(np.float32)
    y_value = np.random.random((2, 3)).astype(np.float32)
    flow.experimental.set_interface_blob_value("x", x_value)
    flow.experimental.set_interface_blob_value("y", y_value)
    test_case.assertTrue(
        np.array_equal(x_value, flow.experimental.get_interface_blob_value("x"))
    )
    test_case.assertTrue(
        np.array_equal(y_value, flow.experimental.get_interface_blob_value("y"))
    )
    test_case.assertTrue(np.array_equal(add(), x_value + y_value))
    flow.config.cpu_device_num(1)
