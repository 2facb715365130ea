"""OneFlow v0.3.4 oneflow/python/test/ops/test_distribute_concat.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""

import flowlab as flow

from .of_util import TestCase


def test_deadlock():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.enable_inplace(False)

    @flow.global_function(function_config=func_config)
    def DistributeConcat():
        with flow.scope.placement("cpu", "0:0"):
            w = flow.get_variable(
                "w", (2, 5), initializer=flow.constant_initializer(10)
            )
            x = w + 1
            y = w + 1
        ret = flow.advanced.distribute_concat([x, y])
        # return ret

    DistributeConcat()
