"""OneFlow v0.3.4 oneflow/python/test/ops/test_function_config.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""

import flowlab as flow

from .of_util import TestCase


def test_default_placement_scope():
    test_case = TestCase()
    func_config = flow.FunctionConfig()
    func_config.default_placement_scope(flow.scope.placement("cpu", "0:0"))

    @flow.global_function(function_config=func_config)
    def Foo():
        test_case.assertEqual(
            "cpu", flow.current_scope().device_parallel_desc_symbol.device_tag
        )
        return flow.get_variable(
            "w", (10,), initializer=flow.constant_initializer(1)
        )

    Foo().get()

def test_config_setter_getter():
    test_case = TestCase()
    func_config = flow.FunctionConfig()
    func_config.enable_inplace()
    test_case.assertEqual(func_config.function_desc.enable_inplace, True)

def test_global_function_desc():
    test_case = TestCase()
    func_config = flow.FunctionConfig()
    func_config.default_placement_scope(flow.scope.placement("cpu", "0:0"))

    @flow.global_function(function_config=func_config)
    def Foo():
        test_case.assertEqual(
            flow.current_global_function_desc().IsTrainable(), False
        )
        return flow.get_variable(
            "w", (10,), initializer=flow.constant_initializer(1)
        )

    Foo().get()
