"""OneFlow v0.3.4 oneflow/python/test/ops/test_multiply.py, ported: CPU only; test_scalar_mul's TensorFlow reference
-> NumPy (x * c, gradient c); test_element_wise_mul_fw_bw is OneFlow's own NumPy check."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import CompareOpWithNumpy, GenArgDict, test_global_storage, type_name_to_flow_type


def _test_element_wise_mul_fw_bw(device, shape, type_name):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    flow_type = type_name_to_flow_type[type_name]

    @flow.global_function(type="train", function_config=func_config)
    def test_element_wise_mul_job(x: oft.Numpy.Placeholder(shape, dtype=flow.float),
                                  y: oft.Numpy.Placeholder(shape, dtype=flow.float)):
        with flow.scope.placement(device, "0:0"):
            x += flow.get_variable(name="vx", shape=(1,), dtype=flow.float, initializer=flow.zeros_initializer())
            y += flow.get_variable(name="vy", shape=(1,), dtype=flow.float, initializer=flow.zeros_initializer())
            x = flow.cast(x, dtype=flow_type)
            y = flow.cast(y, dtype=flow_type)
            out = flow.math.multiply(x, y)
            out = flow.cast(out, dtype=flow.float)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(out)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(y, test_global_storage.Setter("y"))
            flow.watch_diff(y, test_global_storage.Setter("y_diff"))
            flow.watch(out, test_global_storage.Setter("out"))
            flow.watch_diff(out, test_global_storage.Setter("out_diff"))
            return out

    x = np.random.randint(low=0, high=10, size=shape).astype(np.float32)
    y = np.random.randint(low=0, high=10, size=shape).astype(np.float32)
    test_element_wise_mul_job(x, y).get()
    g = test_global_storage.Get
    assert np.allclose(g("x") * g("y"), g("out"))
    assert np.allclose(g("out_diff") * g("x"), g("y_diff"))
    assert np.allclose(g("out_diff") * g("y"), g("x_diff"))


def test_scalar_mul():
    for c in [1, -1, 84223.19348, -3284.139]:
        arg_dict = OrderedDict()
        arg_dict["device_type"] = ["cpu"]
        arg_dict["flow_op"] = [flow.math.multiply]
        arg_dict["np_op"] = [lambda x, c=c: (x * np.float32(c), np.full_like(x, np.float32(c)))]
        arg_dict["input_shape"] = [(10, 10, 10)]
        arg_dict["op_args"] = [[c]]
        for arg in GenArgDict(arg_dict):
            CompareOpWithNumpy(**arg)


def test_element_wise_mul_fw_bw():
    arg_dict = OrderedDict()
    arg_dict["device"] = ["cpu"]
    arg_dict["shape"] = [(96, 96)]
    arg_dict["type_name"] = ["float32", "double", "int8", "int32", "int64"]
    for arg in GenArgDict(arg_dict):
        _test_element_wise_mul_fw_bw(**arg)
