"""OneFlow v0.3.4 oneflow/python/test/ops/test_categorical_ordinal_encoder.py, ported: CPU only (the GPU cases,
skipped by OneFlow's CPU runs, run on the CPU), sizes reduced about tenfold (cpu_large: size 20000, capacity
220000, 200000 tokens, 100 iterations -> 2000, 22000, 20000, 10; the others alike). OneFlow's checks kept: one
ordinal per key across all iterations, and two encoders fed the same keys agree."""

import sys
import typing

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase


def _test_categorical_ordinal_encoder(
    test_case, device_tag, dtype, size, capacity, num_tokens, num_iters
):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def test_job(
        x: oft.Numpy.Placeholder(shape=(size,), dtype=dtype)
    ) -> typing.Tuple[oft.Numpy, oft.Numpy]:
        with flow.scope.placement(device_tag, "0:0"):
            y = flow.layers.categorical_ordinal_encoder(x, capacity=capacity)
            z = flow.layers.categorical_ordinal_encoder(
                x, capacity=capacity, name="encode1"
            )
            # z = flow.layers.categorical_ordinal_encoder(x, capacity=320)
            return y, z

    check_point = flow.train.CheckPoint()
    check_point.init()

    tokens = np.random.randint(-sys.maxsize, sys.maxsize, size=[num_tokens]).astype(
        flow.convert_oneflow_dtype_to_numpy_dtype(dtype)
    )
    k_set = set()
    v_set = set()
    kv_set = set()
    vk_set = set()

    for i in range(num_iters):
        x = tokens[np.random.randint(0, num_tokens, (size,))]
        y, z = test_job(x)

        test_case.assertEqual(x.shape, y.shape)
        if device_tag == "cpu":
            test_case.assertTrue(
                np.array_equal(y, z),
                f"\ny: {y.shape}\n{y}\nz: {z.shape}\n{z}",
            )

        for k, v in zip(x, y):
            k_set.add(k)
            v_set.add(v)
            kv_set.add((k, v))
            vk_set.add((v, k))

    unique_size = len(k_set)
    test_case.assertEqual(len(v_set), unique_size)
    test_case.assertEqual(len(kv_set), unique_size)
    test_case.assertEqual(len(vk_set), unique_size)


def test_categorical_ordinal_encoder_gpu_large():
    _test_categorical_ordinal_encoder(test_case=TestCase(), device_tag="cpu", dtype=flow.int64, size=1000,
                                      capacity=32000, num_tokens=20000, num_iters=16)


def test_categorical_ordinal_encoder_gpu_small():
    _test_categorical_ordinal_encoder(test_case=TestCase(), device_tag="cpu", dtype=flow.int32, size=10,
                                      capacity=250, num_tokens=200, num_iters=4)


def test_categorical_ordinal_encoder_cpu_large():
    _test_categorical_ordinal_encoder(test_case=TestCase(), device_tag="cpu", dtype=flow.int64, size=2000,
                                      capacity=22000, num_tokens=20000, num_iters=10)


def test_categorical_ordinal_encoder_cpu_very_large():
    _test_categorical_ordinal_encoder(test_case=TestCase(), device_tag="cpu", dtype=flow.int64, size=5000,
                                      capacity=100000, num_tokens=50000, num_iters=10)
