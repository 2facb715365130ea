"""OneFlow v0.3.4 oneflow/python/test/ops/test_watch.py, ported unchanged but for the imports (handlers counted)."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft


def test_simple():
    flow.config.cpu_device_num(1)  # OneFlow: gpu_device_num
    data = np.ones((10,), dtype=np.float32)
    seen = []

    def EqOnes(x):
        assert np.allclose(data, x.numpy())
        seen.append(1)

    @flow.global_function()
    def ReluJob(x: oft.Numpy.Placeholder((10,))):
        flow.watch(x, EqOnes)

    ReluJob(data)
    flow.sync_default_session()
    assert seen == [1]


def test_two_device():
    flow.config.cpu_device_num(2)  # OneFlow: gpu_device_num
    data = np.ones((10,), dtype=np.float32)
    seen = []

    def EqOnes(x):
        assert np.allclose(data, x.numpy())
        seen.append(1)

    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=func_config)
    def ReluJob(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.relu(x)
        flow.watch(y, EqOnes)

    ReluJob(data)
    flow.sync_default_session()
    assert seen == [1]
