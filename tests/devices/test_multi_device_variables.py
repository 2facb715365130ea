"""Variables on several devices: model parallelism (a split weight) trains like one device; the session's view of
a variable is its logical value (get_all_variables, load_variables, checkpoints); a failing call puts back every
device's piece."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import KernelError
from tests.helpers.failure_semantics import failing_late
from tests.helpers.multi_device_variables import batches, define_mixed, train


def test_model_parallel_dense_trains_like_one_device():
    want_losses, want_vars, _ = train("0:0", 1)
    losses, variables, _ = train("0:0-1", 2)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for name, value in want_vars.items():  # logical values: the split weight gathered
        np.testing.assert_allclose(variables[name], value, rtol=1e-5, atol=1e-7, err_msg=name)
    session = flow.default_session()
    weight = session.variables()["dense2-weight"]
    assert str(weight.sbp) == "S(0)" and [a.shape for a in weight.arrays] == [(2, 8), (2, 8)]
    assert weight.shape == (4, 8)
    momentum = session.variables()["dense2-weight-momentum"]  # the optimizer state lies like its variable
    assert [a.shape for a in momentum.arrays] == [(2, 8), (2, 8)]


def test_load_variables_and_checkpoints_round_trip_logical_values(tmp_path):
    _, trained, job = train("0:0-1", 2)
    flow.checkpoint.save(str(tmp_path / "ckpt"))
    saved = np.fromfile(tmp_path / "ckpt" / "dense2-weight" / "out", np.float32).reshape(4, 8)
    np.testing.assert_array_equal(saved, trained["dense2-weight"])  # the whole weight, gathered from 2 devices
    flow.load_variables({name: np.zeros_like(v) for name, v in trained.items() if v.dtype == np.float32})
    assert all(not v.any() for v in flow.get_all_variables().values() if v.dtype == np.float32)
    for v in flow.default_session().variables().values():  # every device's piece was written
        assert all(not a.any() for a in v.arrays if a.dtype == np.float32)
    flow.checkpoint.load(str(tmp_path / "ckpt"))
    for name, value in flow.get_all_variables().items():
        np.testing.assert_array_equal(value, trained[name], err_msg=name)
    weight = flow.default_session().variables()["dense1-weight"]  # B: both devices hold the loaded value
    np.testing.assert_array_equal(weight.arrays[0], weight.arrays[1])


def test_split_variable_starts_from_the_same_logical_value_as_on_one_device():
    flow.config.cpu_device_num(2)
    job = define_mixed("0:0-1")
    job(*batches(1)[0])
    two = flow.default_session().variables()["dense2-weight"]
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    job = define_mixed("0:0")
    session = flow.default_session()
    session.try_init()  # runs System-ModelInit only
    one = session.variables()["dense2-weight"].logical()
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    job = define_mixed("0:0-1")
    session = flow.default_session()
    session.try_init()
    np.testing.assert_array_equal(session.variables()["dense2-weight"].logical(), one)
    assert two.shape == one.shape


@pytest.mark.parametrize("replay", ["1", "0"])
def test_a_failing_update_puts_back_every_devices_piece(monkeypatch, replay):
    monkeypatch.setenv("FLOWLAB_REPLAY", replay)
    state = failing_late(monkeypatch, "momentum_update")
    flow.config.cpu_device_num(2)
    job = define_mixed("0:0-1")
    data = batches(6)
    for x, y in data[:4]:
        job(x, y)
    state["per_call"] = state["acts"] // 4  # 4 trained variables on 2 devices: 8 update acts a call
    assert state["per_call"] == 8
    before = {k: a.copy() for v in flow.default_session().variables().values() for k, a in v.keys().items()}
    state["acts"], state["armed"] = 0, True
    with pytest.raises(KernelError, match="simulated failure of the last update"):
        job(*data[4])
    after = {k: a for v in flow.default_session().variables().values() for k, a in v.keys().items()}
    assert "dense1-weight@1" in after
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)


def test_a_variable_split_on_columns_over_three_devices_saves_and_loads_whole(tmp_path):
    """Each device writes its (non-contiguous) columns into the one ``out`` file; a load gives each its slice."""
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-2"):
            w = flow.get_variable("w", shape=(4, 7), initializer=flow.random_normal_initializer(),
                                  distribute=flow.distribute.split(1))
            return flow.matmul(x, w)

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    session = flow.default_session()
    y = job(x)
    w = session.variables()["w"]
    assert str(w.sbp) == "S(1)" and [a.shape for a in w.arrays] == [(4, 3), (4, 2), (4, 2)]
    value = w.logical()
    np.testing.assert_allclose(y, x @ value, rtol=1e-6)
    flow.checkpoint.save(str(tmp_path / "ckpt"))
    np.testing.assert_array_equal(np.fromfile(tmp_path / "ckpt" / "w" / "out", np.float32).reshape(4, 7), value)
    flow.load_variables({"w": np.zeros((4, 7), np.float32)})
    assert not flow.get_all_variables()["w"].any()
    flow.checkpoint.load(str(tmp_path / "ckpt"))
    np.testing.assert_array_equal(flow.get_all_variables()["w"], value)
    np.testing.assert_allclose(job(x), x @ value, rtol=1e-6)
