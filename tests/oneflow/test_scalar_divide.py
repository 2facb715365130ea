"""OneFlow v0.3.4 oneflow/python/test/ops/test_scalar_divide.py, ported unchanged but for the imports."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft


def _config(view):
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(view)
    func_config.default_data_type(flow.float)
    return func_config


def test_scalar_div_2():
    @flow.global_function(function_config=_config(flow.scope.consistent_view()))
    def Div2Job(a: oft.Numpy.Placeholder((10, 10))):
        return a / 2

    x = np.random.rand(10, 10).astype(np.float32) + 1
    y = Div2Job(x).get().numpy()
    assert np.allclose(y, x / 2)


def test_scalar_div_by_2():
    @flow.global_function(function_config=_config(flow.scope.consistent_view()))
    def DivBy2Job(a: oft.Numpy.Placeholder((10, 10))):
        return 2 / a

    x = np.random.rand(10, 10).astype(np.float32) + 1
    y = DivBy2Job(x).get().numpy()
    assert np.allclose(y, 2 / x)


def test_scalar_div_2_mirrored():
    @flow.global_function(function_config=_config(flow.scope.mirrored_view()))
    def Div2Job(a: oft.ListNumpy.Placeholder((10, 10))):
        return a / 2

    x = np.random.rand(10, 10).astype(np.float32) + 1
    y = Div2Job([x]).get().numpy_list()[0]
    assert np.allclose(y, x / 2)


def test_scalar_div_by_2_mirrored():
    @flow.global_function(function_config=_config(flow.scope.mirrored_view()))
    def DivBy2Job(a: oft.ListNumpy.Placeholder((10, 10))):
        return 2 / a

    x = np.random.rand(10, 10).astype(np.float32) + 1
    y = DivBy2Job([x]).get().numpy_list()[0]
    assert np.allclose(y, 2 / x)
