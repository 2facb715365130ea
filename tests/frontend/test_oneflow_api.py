"""OneFlow v0.3.4's API beside the ops (issue 23): blob.batch_axis / split_axis, current_scope,
current_global_function_desc, FunctionConfig.function_desc, transpose(batch_axis_non_change=), concat(max_dim_size=),
slice_v2 with fewer entries than axes, parallel_cast, the eager switches and convert_oneflow_dtype_to_numpy_dtype.
Expected values come from OneFlow's own tests (test_function_input_output.py, test_function_config.py) and its
source (py_blob_desc.h, array_ops.py, dtype.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import SessionStateError


def test_invalid_axes_are_oneflows_number():
    assert flow.INVALID_BATCH_AXIS == -22 and flow.INVALID_SPLIT_AXIS == -22  # py_blob_desc.h


def test_batch_axis_follows_the_placeholder_through_the_ops():
    """test_function_input_output.py: Placeholder(batch_axis=1) gives x.batch_axis == 1, batch_axis=None
    INVALID_BATCH_AXIS; a transpose moves it, a variable has none, a reduction over it removes it."""
    seen = {}

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 5), batch_axis=1), y: tp.Numpy.Placeholder((2, 5), batch_axis=None),
            z: tp.Numpy.Placeholder((4, 3))):
        v = flow.get_variable("v", (4, 3), initializer=flow.constant_initializer(1.0))
        seen.update(x=x.batch_axis, y=y.batch_axis, z=z.batch_axis, v=v.batch_axis, zv=(z * v).batch_axis,
                    zt=flow.transpose(z, perm=[1, 0]).batch_axis,
                    z_sum0=flow.math.reduce_sum(z, axis=[0]).batch_axis,
                    z_sum1=flow.math.reduce_sum(z, axis=[1]).batch_axis)
        return x

    job(np.ones((2, 5), np.float32), np.ones((2, 5), np.float32), np.ones((4, 3), np.float32)).get()
    assert seen == {"x": 1, "y": flow.INVALID_BATCH_AXIS, "z": 0, "v": flow.INVALID_BATCH_AXIS, "zv": 0, "zt": 1,
                    "z_sum0": flow.INVALID_BATCH_AXIS, "z_sum1": 0}


def test_split_axis_is_the_producers_sbp():
    flow.config.cpu_device_num(2)
    seen = {}

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            v = flow.get_variable("v", (4, 3), initializer=flow.constant_initializer(1.0))
            y = flow.math.relu(x)
            seen.update(x=x.split_axis, v=v.split_axis, y=y.split_axis,
                        yt=flow.transpose(y, perm=[1, 0], name="yt").split_axis, xv=(x * v).split_axis)
            return y

    np.testing.assert_array_equal(job(np.full((4, 3), 2, np.float32)), np.full((4, 3), 2, np.float32))
    compiled = flow.default_session().job_set.job("job")
    xv = compiled.sbp_signatures["broadcast_mul_0"]["z_0"]  # whatever inference chose, the query said so too
    assert seen == {"x": 0, "v": flow.INVALID_SPLIT_AXIS, "y": 0, "yt": 1,
                    "xv": xv.axis if xv.is_split else flow.INVALID_SPLIT_AXIS}
    assert str(compiled.sbp_signatures["v"]["out"]) == "B" and str(compiled.sbp_signatures["yt"]["output_0"]) \
        == "S(1)"


def test_current_scope_and_function_desc():
    """test_function_config.py: the default placement scope's device tag, IsTrainable(), function_desc."""
    flow.config.cpu_device_num(2)
    seen = {}
    cfg = flow.FunctionConfig()
    cfg.default_placement_scope(flow.scope.placement("cpu", "0:0"))

    @flow.global_function(function_config=cfg)
    def predict():
        seen["tag"] = flow.current_scope().device_parallel_desc_symbol.device_tag
        with flow.scope.placement("cpu", "0:0-1"), flow.scope.namespace("block"):
            scope = flow.current_scope()
            seen["num"] = scope.device_parallel_desc_symbol.parallel_num
            seen["ids"] = scope.device_parallel_desc_symbol.machine_id2device_id_list
            seen["prefixes"] = scope.scope_op_name_prefixes
        seen["predict"] = flow.current_global_function_desc().IsTrainable()
        return flow.get_variable("w", (10,), initializer=flow.constant_initializer(1))

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        seen["train"] = flow.current_global_function_desc().IsTrainable()
        w = flow.get_variable("u", (2,), initializer=flow.constant_initializer(1))
        loss = flow.math.reduce_sum(x * w)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    np.testing.assert_array_equal(predict().get().numpy(), np.ones(10, np.float32))  # traces both jobs
    assert seen == {"tag": "cpu", "num": 2, "ids": {0: [0, 1]}, "prefixes": ("block",), "predict": False,
                    "train": True}
    with pytest.raises(SessionStateError, match="inside a @flow.global_function"):
        flow.current_global_function_desc()
    assert not flow.current_scope().is_mirrored


def test_function_config_function_desc_reads_the_fields():
    cfg = flow.FunctionConfig()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_inplace is one flowlab does not act on
        cfg.enable_inplace()
    assert cfg.function_desc.enable_inplace is True  # test_function_config.py
    assert cfg.function_desc.HasAttr("enable_inplace") and not cfg.function_desc.HasAttr("concurrency_width")
    assert cfg.function_desc.concurrency_width == 128  # a default
    assert cfg.function_desc.train.num_gradient_accumulation_steps == 1
    with pytest.raises(AttributeError, match="did you mean enable_inplace"):
        cfg.function_desc.enable_inplce  # noqa: B018


def test_transpose_batch_axis_non_change_and_conjugate():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.transpose(x, perm=[1, 0], batch_axis_non_change=True)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(job(x), x.T)
    flow.clear_default_session()

    @flow.global_function()
    def bad(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.transpose(x, perm=[1, 0], batch_axis_non_change=1)

    with pytest.raises(TypeError, match="batch_axis_non_change takes a bool"):
        bad(x)


def test_concat_max_dim_size_values_and_one_input():
    """array_ops.py: max_dim_size must hold the joined static size; ``values`` is the older name; one input is
    returned as it is."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((2, 3)), b: tp.Numpy.Placeholder((2, 3))) -> tuple[tp.Numpy, tp.Numpy]:
        one = flow.concat([a])
        assert one is a
        return flow.concat([a, b], axis=1, max_dim_size=6), flow.concat(values=[a, b], axis=-2, max_dim_size=9)

    wide, tall = job(x, -x)
    np.testing.assert_array_equal(wide, np.concatenate([x, -x], axis=1))
    np.testing.assert_array_equal(tall, np.concatenate([x, -x], axis=0))
    flow.clear_default_session()

    @flow.global_function()
    def small(a: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.concat([a, a], axis=1, max_dim_size=5)

    with pytest.raises(ValueError, match="max_dim_size 5 is too small to hold the joined size 6"):
        small(x)


def test_slice_v2_fills_the_axes_a_short_list_leaves_out():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((3, 4, 5))) -> tuple[tp.Numpy, tp.Numpy]:
        return (flow.slice_v2(a, [(None, None, None), (0, 4, 2)]), flow.slice_v2(a, [(1, 3, 1)]))

    two, one = job(x)
    np.testing.assert_array_equal(two, x[:, 0:4:2])
    np.testing.assert_array_equal(one, x[1:3])
    flow.clear_default_session()

    @flow.global_function()
    def long(a: tp.Numpy.Placeholder((3, 4, 5))) -> tp.Numpy:
        return flow.slice_v2(a, [(None, None, None)] * 4)

    with pytest.raises(ValueError, match="at most 3"):
        long(x)


def test_parallel_cast_lays_the_blob_out_as_asked():
    """Wide & Deep casts its sparse fields to B and its scores back to S(0): the identity's input takes that
    SBP; the values are the blob's."""
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            b = flow.parallel_cast(x, distribute=flow.distribute.broadcast(), name="to_b")
            s = flow.parallel_cast(b * 2.0, distribute=flow.distribute.split(0),
                                   gradient_distribute=flow.distribute.broadcast(), name="to_s")
            return s

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(job(x), 2 * x)
    compiled = flow.default_session().job_set.job("job")
    assert str(compiled.sbp_signatures["to_b"]["in_0"]) == "B"
    assert str(compiled.sbp_signatures["to_s"]["in_0"]) == "S(0)"
    flow.clear_default_session()

    @flow.global_function()
    def bad(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.parallel_cast(x, gradient_distribute="B")

    with pytest.raises(Exception, match="gradient_distribute takes flow.distribute"):
        bad(x)


def test_eager_execution_is_off_and_cannot_be_turned_on():
    assert flow.eager_execution_enabled() is False
    flow.enable_eager_execution(False)
    with pytest.raises(NotImplementedError, match="lazy mode only"):
        flow.enable_eager_execution()
    with pytest.raises(TypeError, match="takes a bool"):
        flow.enable_eager_execution(1)


def test_convert_oneflow_dtype_to_numpy_dtype():
    """dtype.py's _ONEFLOW_DTYPE_TO_NUMPY_DTYPE."""
    want = {flow.char: np.byte, flow.float: np.float32, flow.float16: np.float16, flow.float32: np.float32,
            flow.float64: np.double, flow.double: np.double, flow.int8: np.int8, flow.int32: np.int32,
            flow.int64: np.int64, flow.uint8: np.uint8}
    for dtype, np_type in want.items():
        assert flow.convert_oneflow_dtype_to_numpy_dtype(dtype) is np_type
    with pytest.raises(NotImplementedError, match="takes a flowlab dtype"):
        flow.convert_oneflow_dtype_to_numpy_dtype(np.float32)
