"""OneFlow v0.3.4 oneflow/python/test/ops/test_checkpoint.py, ported: the 1n4d tests on 4 CPU devices
(flow.unittest.env's device_num / node_size written as constants), "gpu" placements as "cpu", the large variables
reduced ((10, 2801, 820, 4) -> (8, 28, 8, 4), (10, 801, 820, 4) -> (8, 80, 8, 4), (10, 80, 40, 20) -> (8, 8, 4, 2)).
The 2-node tests and the eager-only round trip are skipped (not applicable)."""

import tempfile

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

from .of_util import TestCase

# flow.unittest.env on the 1-node, 4-device configuration the 1n4d tests run in (CPU devices here)
DEVICE_NUM, NODE_SIZE = 4, 1


def refresh_session():
    flow.clear_default_session()
    flow.config.cpu_device_num(DEVICE_NUM)


def get_placement():
    node_size = NODE_SIZE
    device_ids = f"0-{DEVICE_NUM - 1}"
    machine_device_ids = [
        f"{node_id}:{device_ids}" for node_id in range(node_size)
    ]
    return flow.scope.placement("cpu", machine_device_ids)


def get_simple_momentum_training_model(dtype):
    assert dtype == flow.float32

    @flow.global_function(type="train")
    def model() -> tp.Numpy:
        with get_placement():
            x = flow.get_variable(
                name="x",
                shape=(4, 5),
                dtype=flow.float32,
                initializer=flow.random_normal_initializer(mean=10, stddev=1),
            )
            w = flow.get_variable(
                name="w",
                shape=(5, 6),
                dtype=flow.float32,
                initializer=flow.random_normal_initializer(mean=10, stddev=1),
                distribute=flow.distribute.split(0),
            )
            y = flow.matmul(x, w)
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0.9
            ).minimize(y)
            return y

    return model


def get_simple_model(dtype):
    @flow.global_function()
    def add() -> tp.Numpy:
        with get_placement():
            x = flow.get_variable(
                name="x",
                shape=(9, 3),
                dtype=dtype,
                initializer=flow.random_normal_initializer(mean=10, stddev=1),
                distribute=flow.distribute.split(0),
            )
            y = flow.get_variable(
                name="y",
                shape=(9, 3),
                dtype=dtype,
                initializer=flow.constant_initializer(5, dtype=dtype),
            )
            z = flow.get_variable(
                name="z",
                shape=(9, 3),
                dtype=dtype,
                initializer=flow.random_normal_initializer(),
            )
            return flow.math.add_n([x, y, z])

    return add


def get_large_model(dtype):
    @flow.global_function()
    def large() -> tp.Numpy:
        with get_placement():
            x = flow.get_variable(
                name="x",
                shape=(8, 28, 8, 4),
                dtype=dtype,
                initializer=flow.random_normal_initializer(mean=10, stddev=1),
                distribute=flow.distribute.split(0),
            )
            return flow.math.reduce_mean(x)

    return large


def get_add_and_reduce_mean_model(dtype):
    @flow.global_function()
    def model() -> tp.Numpy:
        with get_placement():
            x = flow.get_variable(
                name="x",
                shape=(8, 80, 8, 4),
                dtype=dtype,
                initializer=flow.random_normal_initializer(mean=10, stddev=1),
                distribute=flow.distribute.split(0),
            )
            y = flow.get_variable(
                name="y",
                shape=(8, 80, 8, 4),
                dtype=dtype,
                initializer=flow.random_normal_initializer(mean=10, stddev=1),
                distribute=flow.distribute.split(0),
            )
            return flow.math.reduce_mean(x + y)

    return model


def get_checkpoint_ready_model(model_getter, dtype):
    model = model_getter(dtype)
    if flow.eager_execution_enabled():
        model()
    return model


def _TestSaveCorrectness(test_case, model_getter, dtype, legacy_api):
    """
    Save weights by new model io, load weights by legacy model io,
    and check the equality.
    """
    with tempfile.TemporaryDirectory() as save_dir:
        refresh_session()
        flow.config.enable_legacy_model_io(False)

        large1 = get_checkpoint_ready_model(model_getter, dtype)

        if legacy_api:
            check_point = flow.train.CheckPoint()
            check_point.save(save_dir)
        else:
            flow.checkpoint.save(save_dir)
        res1 = large1()

        refresh_session()
        flow.config.enable_legacy_model_io(True)

        large2 = get_checkpoint_ready_model(model_getter, dtype)

        check_point = flow.train.CheckPoint()
        check_point.load(save_dir)
        flow.sync_default_session()

        res2 = large2()
        test_case.assertTrue(np.array_equal(res1, res2))


def _TestRoundTrip(test_case, model_getter, dtype):
    """
    Save weights by new model io, load weights by new model io,
    and check the equality.
    """
    with tempfile.TemporaryDirectory() as save_dir:
        refresh_session()

        large1 = get_checkpoint_ready_model(model_getter, dtype)

        flow.checkpoint.save(save_dir)
        res1 = large1()

        refresh_session()

        large2 = get_checkpoint_ready_model(model_getter, dtype)

        vars_in_file = flow.checkpoint.get(save_dir)
        flow.load_variables(vars_in_file)
        res2 = large2()

        test_case.assertTrue(np.array_equal(res1, res2))


def _TestLoadCorrectness(test_case, model_getter, dtype, legacy_api):
    """
    Save weights by legacy model io, load weights by new model io,
    and check the equality.
    """
    with tempfile.TemporaryDirectory() as save_dir:
        refresh_session()
        flow.config.enable_legacy_model_io(True)

        large1 = get_checkpoint_ready_model(model_getter, dtype)

        check_point = flow.train.CheckPoint()
        check_point.init()

        check_point.save(save_dir)
        res1 = large1()

        flow.clear_default_session()
        flow.config.cpu_device_num(4)
        flow.config.enable_legacy_model_io(False)

        large2 = get_checkpoint_ready_model(model_getter, dtype)

        if legacy_api:
            check_point = flow.train.CheckPoint()
            check_point.load(save_dir)
        else:
            vars_in_file = flow.checkpoint.get(save_dir)
            flow.load_variables(vars_in_file)

        res2 = large2()

        test_case.assertTrue(np.array_equal(res1, res2))


def _TestPartiallyLoadNumpy(test_case, dtype):
    refresh_session()

    model = get_checkpoint_ready_model(get_add_and_reduce_mean_model, dtype)
    var_x = flow.get_all_variables()["x"]
    var_y_value_before_loading = flow.get_all_variables()["y"].numpy()
    new_val_np = np.random.random(var_x.shape).astype(np.float32)
    flow.load_variables({"x": new_val_np})
    var_y_value_after_loading = flow.get_all_variables()["y"].numpy()
    flow_res = model()
    np_res = (var_y_value_after_loading + new_val_np).mean()
    test_case.assertTrue(np.allclose(flow_res, np_res))
    test_case.assertTrue(
        np.array_equal(var_y_value_before_loading, var_y_value_after_loading)
    )


def _TestMixedModel(test_case, dtype):
    with tempfile.TemporaryDirectory() as save_dir1, tempfile.TemporaryDirectory() as save_dir2:

        def get_variable(name):
            return flow.get_variable(
                name=name,
                shape=(8, 8, 4, 2),
                dtype=dtype,
                initializer=flow.random_normal_initializer(mean=10, stddev=1),
                distribute=flow.distribute.split(0),
            )

        def get_part_of_mixed_model(dtype):
            @flow.global_function()
            def model() -> tp.Numpy:
                with get_placement():
                    x = get_variable("x")
                    return x

            return model

        def get_mixed_model(dtype):
            @flow.global_function()
            def model() -> tp.Numpy:
                with get_placement():
                    x1 = get_variable("x_from_model1")
                    x2 = get_variable("x_from_model2")
                    return x1 + x2

            return model

        refresh_session()
        model1 = get_checkpoint_ready_model(get_part_of_mixed_model, dtype)
        flow.checkpoint.save(save_dir1)

        refresh_session()
        model2 = get_checkpoint_ready_model(get_part_of_mixed_model, dtype)
        flow.checkpoint.save(save_dir2)

        refresh_session()
        mixed_model = get_checkpoint_ready_model(get_mixed_model, dtype)
        var_dict_from_model1 = flow.checkpoint.get(save_dir1)
        var_dict_from_model2 = flow.checkpoint.get(save_dir2)
        new_var_dict = {}
        for key, val in var_dict_from_model1.items():
            new_var_dict[f"{key}_from_model1"] = val
        for key, val in var_dict_from_model2.items():
            new_var_dict[f"{key}_from_model2"] = val
        flow.load_variables(new_var_dict)
        res = mixed_model()
        test_case.assertTrue(
            np.allclose(
                res,
                var_dict_from_model1["x"].numpy() + var_dict_from_model2["x"].numpy(),
            )
        )


def _TestResumeTraining(test_case):
    with tempfile.TemporaryDirectory() as save_dir:
        refresh_session()
        model = get_checkpoint_ready_model(
            get_simple_momentum_training_model, flow.float32
        )
        model()
        flow.checkpoint.save(save_dir)
        model()
        w1 = flow.get_all_variables()["w"].numpy()

        refresh_session()
        model = get_checkpoint_ready_model(
            get_simple_momentum_training_model, flow.float32
        )
        flow.load_variables(flow.checkpoint.get(save_dir))
        model()
        w2 = flow.get_all_variables()["w"].numpy()

        test_case.assertTrue(np.array_equal(w1, w2))


def _TestAssignmentBetweenMemory(test_case, dtype):
    refresh_session()

    model = get_checkpoint_ready_model(get_simple_model, dtype)
    all_vars = flow.get_all_variables()
    flow.load_variables({"x": all_vars["z"]})
    flow_res = model()
    np_res = all_vars["z"].numpy() * 2 + all_vars["y"].numpy()
    test_case.assertTrue(np.allclose(flow_res, np_res))


def test_save_correctness_1node_legacy_api():
    _TestSaveCorrectness(TestCase(), get_simple_model, flow.float, True)


def test_load_correctness_1node_legacy_api():
    _TestLoadCorrectness(TestCase(), get_simple_model, flow.float, True)


def test_save_correctness_1node():
    for dtype in [flow.float, flow.double]:
        _TestSaveCorrectness(TestCase(), get_large_model, dtype, False)


@pytest.mark.skip(reason="not applicable: 2 nodes (flow.unittest's 2n4d); flowlab's machines are Ray processes")
def test_save_correctness_2node():
    _TestSaveCorrectness(TestCase(), get_large_model, flow.float, False)


def test_load_correctness_1node():
    for dtype in [flow.float, flow.double]:
        _TestLoadCorrectness(TestCase(), get_large_model, dtype, False)


@pytest.mark.skip(reason="not applicable: 2 nodes (flow.unittest's 2n4d); flowlab's machines are Ray processes")
def test_load_correctness_2node():
    _TestLoadCorrectness(TestCase(), get_large_model, flow.float, False)


def test_assignment_between_memory():
    _TestAssignmentBetweenMemory(TestCase(), flow.float)


@pytest.mark.skip(reason="eager mode only in OneFlow ('Save and load are covered by other tests in lazy mode')")
def test_round_trip():
    _TestRoundTrip(TestCase(), get_large_model, flow.float)


def test_partially_load_numpy():
    _TestPartiallyLoadNumpy(TestCase(), flow.float)


def test_mixed_model():
    _TestMixedModel(TestCase(), flow.float)


def test_resume_training():
    _TestResumeTraining(TestCase())
