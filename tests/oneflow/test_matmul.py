"""OneFlow v0.3.4 oneflow/python/test/ops/test_matmul.py, ported: CPU only (OneFlow skips float16 and TF32 on the
CPU too), TensorFlow -> NumPy float64 (dA = dY B^T, dB = A^T dY, transposes applied), shapes reduced ((512, 256) x
(256, 1024) -> (64, 32) x (32, 128); batch (10, 10, 64, 32) -> (2, 3, 16, 8)); OneFlow's 1e-3 tolerance kept."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, test_global_storage, type_name_to_flow_type


def _t(m, flag):
    return np.swapaxes(m, -1, -2) if flag else m


def compare_with_tensorflow(device_type, a_shape, b_shape, transpose_a, transpose_b, data_type, fuse_add_to_output,
                            enable_tf32):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    func_config.enable_fuse_add_to_output(fuse_add_to_output)
    flow.config.enable_tensor_float_32_compute(enable_tf32)
    dtype = type_name_to_flow_type[data_type]

    @flow.global_function(type="train", function_config=func_config)
    def MatmulJob():
        with flow.scope.placement(device_type, "0:0"):
            a = flow.get_variable("a", shape=a_shape, dtype=dtype,
                                  initializer=flow.random_uniform_initializer(minval=0, maxval=1), trainable=True)
            b = flow.get_variable("b", shape=b_shape, dtype=dtype,
                                  initializer=flow.random_uniform_initializer(minval=0, maxval=1), trainable=True)
            out = flow.matmul(a, b, transpose_a, transpose_b)
            c = flow.get_variable("c", shape=out.shape, dtype=dtype,
                                  initializer=flow.random_uniform_initializer(minval=-1, maxval=1), trainable=True)
            loss = out + c
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            for name, blob in (("a", a), ("b", b), ("c", c), ("loss", loss)):
                flow.watch(blob, test_global_storage.Setter(name))
                flow.watch_diff(blob, test_global_storage.Setter(name + "_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = MatmulJob().get()
    a, b, c = (test_global_storage.Get(k).astype(np.float64) for k in "abc")
    dy = test_global_storage.Get("loss_diff").astype(np.float64)
    ref_out = _t(a, transpose_a) @ _t(b, transpose_b) + c
    ref_da = _t(dy @ np.swapaxes(_t(b, transpose_b), -1, -2), transpose_a)
    ref_db = _t(np.swapaxes(_t(a, transpose_a), -1, -2) @ dy, transpose_b)
    tolerance = 1e-3
    assert np.allclose(of_out.numpy(), ref_out, rtol=tolerance, atol=tolerance)
    assert np.allclose(test_global_storage.Get("a_diff"), ref_da, rtol=tolerance, atol=tolerance)
    assert np.allclose(test_global_storage.Get("b_diff"), ref_db, rtol=tolerance, atol=tolerance)
    assert np.allclose(test_global_storage.Get("c_diff"), dy, rtol=tolerance, atol=tolerance)


def filter_args(arg_list):
    def trans_shape(shape):
        return shape[:-2] + (shape[-1], shape[-2])

    ret = []
    for arg in arg_list:
        a_shape = trans_shape(arg[1]) if arg[3] else arg[1]
        b_shape = trans_shape(arg[2]) if arg[4] else arg[2]
        if a_shape[-1] == b_shape[-2]:
            ret.append(tuple(arg))
    return ret


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["a_shape"] = [(64, 32), (32, 64)]
    arg_dict["b_shape"] = [(32, 128), (128, 32)]
    arg_dict["transpose_a"] = [True, False]
    arg_dict["transpose_b"] = [True, False]
    arg_dict["data_type"] = ["float32", "double"]
    arg_dict["fuse_add_to_output"] = [True, False]
    arg_dict["enable_tf32"] = [False]
    matmul_args = filter_args(GenArgList(arg_dict))
    arg_dict.clear()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["a_shape"] = [(2, 3, 16, 8), (2, 3, 8, 16)]
    arg_dict["b_shape"] = [(2, 3, 8, 32), (2, 3, 32, 8)]
    arg_dict["transpose_a"] = [True, False]
    arg_dict["transpose_b"] = [True, False]
    arg_dict["data_type"] = ["float32", "double"]
    arg_dict["fuse_add_to_output"] = [True, False]
    arg_dict["enable_tf32"] = [False]
    return matmul_args + filter_args(GenArgList(arg_dict))


def test_matmul():
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)
