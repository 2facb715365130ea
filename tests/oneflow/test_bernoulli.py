"""OneFlow v0.3.4 oneflow/python/test/ops/test_bernoulli.py, ported unchanged but for the imports and the
unittest class as pytest functions."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase


def test_bernoulli():
    test_case = TestCase()
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def BernoulliJob(a: oft.Numpy.Placeholder((10, 10))):
        return flow.random.bernoulli(a)

    x = np.ones((10, 10), dtype=np.float32)
    y = BernoulliJob(x).get().numpy()
    test_case.assertTrue(np.array_equal(y, x))

    x = np.zeros((10, 10), dtype=np.float32)
    y = BernoulliJob(x).get().numpy()
    test_case.assertTrue(np.array_equal(y, x))


def test_bernoulli_mirrored():
    test_case = TestCase()
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def BernoulliJob(a: oft.ListNumpy.Placeholder((10, 10))):
        return flow.random.bernoulli(a)

    x = np.ones((10, 10), dtype=np.float32)
    y = BernoulliJob([x]).get().numpy_list()[0]
    test_case.assertTrue(np.array_equal(y, x))

    x = np.zeros((10, 10), dtype=np.float32)
    y = BernoulliJob([x]).get().numpy_list()[0]
    test_case.assertTrue(np.array_equal(y, x))
