"""Bad checkpoint directories: each is an error that names the file or the variable and overwrites nothing; a
variable named with '/' is a nested directory (as OneFlow's ``os.path.join`` makes it) and round-trips."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.runtime.checkpoint_io import CheckpointError
from tests.helpers.checkpoint_files import define_job, saved, unchanged


@pytest.mark.parametrize("file", ["out", "meta"])
def test_a_symlink_out_of_the_checkpoint_is_refused(tmp_path, file):
    root = saved(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.write_bytes((root / "layer-weight" / file).read_bytes())  # a perfectly valid file, but not ours
    (root / "layer-weight" / file).unlink()
    (root / "layer-weight" / file).symlink_to(outside)
    with pytest.raises(CheckpointError) as err:
        flow.checkpoint.load(root)
    message = str(err.value)
    assert str(root / "layer-weight" / file) in message and "outside the checkpoint" in message
    assert str(outside) in message
    unchanged()
    with pytest.raises(CheckpointError, match="outside the checkpoint"):
        flow.checkpoint.get(root)["layer-weight"].numpy()


def test_a_symlink_inside_the_checkpoint_is_followed(tmp_path):
    root = saved(tmp_path)
    (root / "other" / "out").unlink()
    (root / "other" / "out").symlink_to(root / "layer-weight" / "out")
    flow.checkpoint.load(root)
    np.testing.assert_array_equal(flow.get_all_variables()["other"], np.full((2, 3), 3, np.float32))


def test_an_unknown_data_type_names_the_meta_file(tmp_path):
    root = saved(tmp_path)
    meta = root / "layer-weight" / "meta"
    meta.write_text("shape {\n  dim: 2 dim: 3\n}\ndata_type: kBFloat99\n")
    with pytest.raises(CheckpointError) as err:
        flow.checkpoint.load(root)
    assert str(meta) in str(err.value) and "'kBFloat99'" in str(err.value) and "kFloat" in str(err.value)
    unchanged()
    blobs = flow.checkpoint.get(root)  # one bad entry does not break the others
    np.testing.assert_array_equal(blobs["other"].numpy(), np.full((2, 3), 4, np.float32))
    with pytest.raises(CheckpointError, match=str(meta)):
        blobs["layer-weight"].numpy()
    assert "kBFloat99" in repr(blobs["layer-weight"])  # repr says what is wrong instead of raising


def test_a_meta_that_is_not_utf8_names_the_file(tmp_path):
    root = saved(tmp_path)
    meta = root / "other" / "meta"
    meta.write_bytes(b"shape { dim: 2 dim: 3 }\ndata_type: kFloat\xff\xfe\n")
    with pytest.raises(CheckpointError) as err:
        flow.checkpoint.load(root)
    assert str(meta) in str(err.value) and "UTF-8" in str(err.value)
    unchanged()
    blobs = flow.checkpoint.get(root)
    np.testing.assert_array_equal(blobs["layer-weight"].numpy(), np.full((2, 3), 3, np.float32))
    with pytest.raises(CheckpointError, match="UTF-8"):
        blobs["other"].shape  # noqa: B018


def test_a_meta_without_data_type_names_the_file(tmp_path):
    root = saved(tmp_path)
    meta = root / "other" / "meta"
    meta.write_text("shape {\n  dim: 2 dim: 3\n}\n")
    with pytest.raises(CheckpointError, match=f"{meta}.*no data_type"):
        flow.checkpoint.load(root)
    unchanged()


def test_a_checkpoint_path_that_is_a_file(tmp_path):
    define_job()
    path = tmp_path / "model.bin"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=f"checkpoint path {path} is a file, not a directory"):
        flow.checkpoint.save(path)
    assert path.read_bytes() == b"not a checkpoint"
    with pytest.raises(CheckpointError, match=f"checkpoint path {path} is a file, not a directory"):
        flow.checkpoint.load(path)
    with pytest.raises(CheckpointError, match=f"checkpoint path {path} is a file, not a directory"):
        flow.checkpoint.get(path)


def test_a_variable_named_with_a_slash_round_trips(tmp_path):
    names = ("a/b", "a", "deep/er/name")
    root = saved(tmp_path, names)
    assert (root / "a" / "b" / "out").is_file() and (root / "a" / "out").is_file()  # OneFlow's os.path.join
    assert np.fromfile(root / "deep" / "er" / "name" / "out", dtype="<f4").tolist() == [5.0] * 6
    blobs = flow.checkpoint.get(root)
    assert sorted(blobs) == ["a", "a/b", "deep/er/name"]
    assert [blobs[n].numpy()[0, 0] for n in names] == [3, 4, 5]
    flow.checkpoint.load(root)
    values = flow.get_all_variables()
    assert [values[n][0, 0] for n in names] == [3, 4, 5]
    flow.clear_default_session()
    job = define_job(names)
    flow.load_variables(flow.checkpoint.get(root))
    np.testing.assert_array_equal(job(np.zeros(3, np.float32)), np.full((2, 3), 12, np.float32))


@pytest.mark.parametrize("name", ["../escape", "a/../../escape", "a/./b", "a//b", "/abs"])
def test_a_variable_name_that_is_not_a_plain_relative_path_is_refused(tmp_path, name):
    define_job((name,))
    flow.get_all_variables()
    with pytest.raises(CheckpointError, match=f"variable name {name!r} escapes the checkpoint directory"):
        flow.checkpoint.save(tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "escape").exists()


def test_checkpoint_get_skips_nothing_but_non_variables(tmp_path):
    root = saved(tmp_path)
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a variable")
    (root / "broken").mkdir()
    (root / "broken" / "out").write_bytes(b"\0" * 7)
    (root / "broken" / "meta").write_text("shape {\n  dim: 2\n}\ndata_type: kFloat\n")
    blobs = flow.checkpoint.get(root)
    assert sorted(blobs) == ["broken", "layer-weight", "other"]
    with pytest.raises(CheckpointError, match=r"broken/out holds 7 bytes; float32\[2\] needs 8"):
        blobs["broken"].numpy()
    np.testing.assert_array_equal(blobs["layer-weight"].numpy(), np.full((2, 3), 3, np.float32))


def test_load_variables_with_a_value_that_cannot_be_cast_changes_no_variable():
    """Every value is checked and cast before any variable is written: a bad one leaves all as they were."""
    flow.clear_default_session()

    @flow.global_function()
    def two_vars_job() -> tp.Numpy:
        a = flow.get_variable("a", shape=(2,), initializer=flow.constant_initializer(1.0))
        b = flow.get_variable("b", shape=(2,), initializer=flow.constant_initializer(2.0))
        return a + b

    before = flow.get_all_variables()
    with pytest.raises(CheckpointError, match=r"variable 'b' is float32; got a value of dtype <U1"):
        flow.load_variables({"a": np.array([5.0, 5.0]), "b": np.array(["x", "y"])})
    after = flow.get_all_variables()
    assert set(after) == {"a", "b"}
    for name in after:
        np.testing.assert_array_equal(after[name], before[name])
