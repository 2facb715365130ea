"""OneFlow v0.3.4 oneflow/python/test/ops/test_optimizer_placement_optimization.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase


def _test(test_case, mode):
    flow.config.cpu_device_num(2)
    flow.config.enable_debug_mode(True)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())
    func_config.optimizer_placement_optimization_mode(mode)

    @flow.global_function(type="train", function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((2, 1024 * 1024))):
        w = flow.get_variable(
            "w", (1024 * 1024,), initializer=flow.constant_initializer(100)
        )
        flow.optimizer.SGD(
            flow.optimizer.PiecewiseConstantScheduler([], [5]), momentum=0
        ).minimize(x + w)

    Foo(np.ones((2, 1024 * 1024), dtype=np.float32))
def test_non_distributed():
    test_case = TestCase()
    _test(test_case, "non_distributed")

def test_distributed_split():
    test_case = TestCase()
    _test(test_case, "distributed_split")
