"""OneFlow v0.3.4 oneflow/python/test/ops/test_reverse.py, ported: "gpu" -> "cpu" (gpu_device_num -> cpu_device_num).
No TensorFlow in it."""


import numpy as np

import flowlab as flow
import flowlab.typing as tp

from .of_util import TestCase


def _of_reverse(input, axis, dtype):
    flow.clear_default_session()

    @flow.global_function()
    def reverse(
        input: tp.Numpy.Placeholder(shape=input.shape, dtype=dtype)
    ) -> tp.Numpy:
        return flow.reverse(input, axis)

    return reverse(input)


def _test_reverse(test_case, input, axis, dtype, verbose=False):
    assert isinstance(input, np.ndarray)
    input = input.astype(flow.convert_oneflow_dtype_to_numpy_dtype(dtype))
    slice_list = [slice(None)] * input.ndim
    for a in axis:
        if a < 0:
            a += input.ndim
        assert a >= 0 and a < input.ndim
        slice_list[a] = slice(None, None, -1)

    output = input[tuple(slice_list)]
    of_output = _of_reverse(input, axis, dtype)
    if verbose:
        print(f"input: {input.shape}\n{input}\n")
        print(f"comparing output:\n{output}\nvs.\n{of_output}")
    test_case.assertTrue(np.array_equal(output, of_output))


def test_reverse_case_1():
    test_case = TestCase()
    input = np.arange(1 * 2 * 3 * 4).reshape(1, 2, 3, 4)
    _test_reverse(test_case, input, [3], flow.int32)

def test_reverse_case_2():
    test_case = TestCase()
    input = np.arange(1 * 2 * 3 * 4).reshape(1, 2, 3, 4)
    _test_reverse(test_case, input, [-1], flow.int32)

def test_reverse_case_3():
    test_case = TestCase()
    input = np.arange(1 * 2 * 3 * 4).reshape(1, 2, 3, 4)
    _test_reverse(test_case, input, [1], flow.int32)

def test_reverse_case_4():
    test_case = TestCase()
    input = np.arange(1 * 2 * 3 * 4).reshape(1, 2, 3, 4)
    _test_reverse(test_case, input, [-3], flow.int32)

def test_reverse_case_5():
    test_case = TestCase()
    input = np.arange(1 * 2 * 3 * 4).reshape(1, 2, 3, 4)
    _test_reverse(test_case, input, [2], flow.float32)

def test_reverse_case_6():
    test_case = TestCase()
    input = np.arange(1 * 2 * 3 * 4).reshape(1, 2, 3, 4)
    _test_reverse(test_case, input, [-2], flow.float32)

