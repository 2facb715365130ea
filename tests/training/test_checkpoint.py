"""Checkpoints in OneFlow v0.3's format, through the model-io jobs; every bad case is an error that overwrites
nothing."""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.runtime.checkpoint_io import CheckpointError

W0 = {"type": "constant", "value": 0.5}


def define_job():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        w = flow.get_variable("layer-weight", shape=(2, 3), initializer=W0)
        flow.get_variable("step", shape=(1,), dtype=flow.int64, initializer={"type": "constant", "value": 0})
        return w

    return job


def test_save_writes_oneflow_layout(tmp_path):
    define_job()
    values = {"layer-weight": np.arange(6, dtype=np.float32).reshape(2, 3), "step": np.array([7])}
    flow.load_variables(values)
    flow.checkpoint.save(tmp_path / "ckpt")
    root = tmp_path / "ckpt"
    assert sorted(p.name for p in root.iterdir()) == ["layer-weight", "snapshot_done", "step"]
    assert (root / "layer-weight" / "meta").read_text() == "shape {\n  dim: 2 dim: 3\n}\ndata_type: kFloat\n"
    assert (root / "step" / "meta").read_text() == "shape {\n  dim: 1\n}\ndata_type: kInt64\n"
    raw = np.fromfile(root / "layer-weight" / "out", dtype="<f4")
    np.testing.assert_array_equal(raw, np.arange(6, dtype=np.float32))
    assert np.fromfile(root / "step" / "out", dtype="<i8").tolist() == [7]
    ran = flow.default_session().runtime.actor("System-ModelSave-layer-weight")
    assert ran.act_id == 1  # saved by the System-ModelSave job


def test_round_trip_through_a_new_session(tmp_path):
    define_job()
    weights = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    flow.load_variables({"layer-weight": weights})
    flow.checkpoint.save(tmp_path / "ckpt")
    flow.clear_default_session()
    job = define_job()
    np.testing.assert_array_equal(job(np.zeros(3, np.float32)), np.full((2, 3), 0.5, np.float32))
    flow.train.CheckPoint().load(tmp_path / "ckpt")
    np.testing.assert_array_equal(job(np.zeros(3, np.float32)), weights)
    loaded = flow.checkpoint.get(tmp_path / "ckpt")
    assert repr(loaded["layer-weight"]) == "VariableBlob('layer-weight', float32[2, 3])"
    np.testing.assert_array_equal(loaded["layer-weight"].numpy(), weights)
    flow.train.CheckPoint().init()
    np.testing.assert_array_equal(flow.get_all_variables()["layer-weight"], np.full((2, 3), 0.5, np.float32))


def test_save_refuses_a_non_empty_directory(tmp_path):
    define_job()
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="is not empty; OneFlow refuses"):
        flow.checkpoint.save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def saved(tmp_path):
    define_job()
    flow.load_variables({"layer-weight": np.ones((2, 3), np.float32) * 3})
    flow.checkpoint.save(tmp_path / "ckpt")
    flow.load_variables({"layer-weight": np.ones((2, 3), np.float32) * 9})
    return tmp_path / "ckpt"


def unchanged():
    np.testing.assert_array_equal(flow.get_all_variables()["layer-weight"], np.full((2, 3), 9, np.float32))


def test_load_missing_directory(tmp_path):
    saved(tmp_path)
    with pytest.raises(CheckpointError, match="does not exist"):
        flow.checkpoint.load(tmp_path / "nope")
    unchanged()


def test_load_missing_variable_is_initialized_with_a_warning_naming_it(tmp_path):
    root = saved(tmp_path)
    for f in (root / "step").iterdir():
        f.unlink()
    (root / "step").rmdir()
    flow.load_variables({"step": np.array([41])})
    expected = f"WARNING! CANNOT find variable path in : {root / 'step' / 'out'}. It will be initialized."
    with pytest.warns(UserWarning, match=re.escape(expected)):
        flow.checkpoint.load(root)
    values = flow.get_all_variables()  # OneFlow's fine-tune rule: the rest load, the missing one initializes
    np.testing.assert_array_equal(values["layer-weight"], np.full((2, 3), 3, np.float32))
    assert values["step"].tolist() == [0]


def test_load_truncated_out(tmp_path):
    root = saved(tmp_path)
    data = (root / "layer-weight" / "out").read_bytes()
    (root / "layer-weight" / "out").write_bytes(data[:-4])
    with pytest.raises(CheckpointError, match=r"holds 20 bytes; float32\[2, 3\] needs 24"):
        flow.checkpoint.load(root)
    unchanged()


def test_load_variable_of_another_shape(tmp_path):
    root = saved(tmp_path)
    (root / "layer-weight" / "meta").write_text("shape {\n  dim: 3 dim: 2\n}\ndata_type: kFloat\n")
    with pytest.raises(CheckpointError, match=r"is float32\[3, 2\].*but the job's variable is float32\[2, 3\]"):
        flow.checkpoint.load(root)
    unchanged()


def test_variable_name_escaping_the_directory(tmp_path):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.get_variable("../escape", shape=(3,))

    flow.get_all_variables()
    with pytest.raises(CheckpointError, match=r"variable name '../escape' escapes the checkpoint directory"):
        flow.checkpoint.save(tmp_path / "ckpt")
    assert not (tmp_path / "escape").exists() and not (tmp_path / "ckpt").exists()


def test_load_variables_checks_shapes_and_names():
    define_job()
    with pytest.raises(CheckpointError, match=r"variable 'layer-weight' is \[2, 3\]; got shape \[3\]"):
        flow.load_variables({"layer-weight": np.zeros(3)})
    with pytest.raises(CheckpointError, match="no variable 'other'"):
        flow.load_variables({"other": np.zeros(3)}, ignore_mismatch=False)
    flow.load_variables({"other": np.zeros(3)})  # ignored by default, as in OneFlow
