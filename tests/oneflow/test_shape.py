"""OneFlow v0.3.4 oneflow/python/test/ops/test_shape.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""


import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase


def test_shape():
    test_case = TestCase()
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=func_config)
    def foo_job(input: oft.Numpy.Placeholder(shape=(2, 5))):
        ret = flow.identity(input)
        test_case.assertTrue(ret.shape == (1, 5))

    input_tensor = np.arange(10).reshape(2, 5).astype(np.single)
    foo_job(input_tensor)
