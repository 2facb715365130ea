"""A checkpoint file that exists but is not a regular file (a FIFO, a directory, a dangling link) is an error that
names it, never "missing" (which would re-initialise the variable and lose its saved values), and reading never
blocks on it (issue 25)."""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import flowlab as flow
from flowlab.runtime.checkpoint_io import CheckpointError
from tests.helpers.checkpoint_files import saved, unchanged

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")


@contextmanager
def fifo_at(path: Path) -> Iterator[None]:
    """Replace ``path`` with a FIFO. Should anything open it for reading (and block there, no writer being
    present), a helper opens its write end after 3 s and closes it, so the reader sees EOF and the test fails on
    its time instead of hanging the suite."""
    path.unlink()
    os.mkfifo(path)
    done = threading.Event()

    def unblock() -> None:
        while not done.wait(3.0):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # ENXIO unless a reader is waiting
            except OSError:
                pass

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize("file", ["out", "meta"])
def test_a_fifo_in_a_checkpoint_is_an_error_naming_it_and_nothing_changes(tmp_path, file):
    root = saved(tmp_path)
    target = root / "layer-weight" / file
    with fifo_at(target):
        start = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "CANNOT find variable path ... It will be initialized."
            with pytest.raises(CheckpointError) as err:
                flow.checkpoint.load(root)
        assert time.monotonic() - start < 2.0  # never opened: opening a FIFO for reading waits for a writer
        assert str(target) in str(err.value) and "FIFO" in str(err.value) and "regular file" in str(err.value)
        unchanged()
        blob = flow.checkpoint.get(root)["layer-weight"]
        with pytest.raises(CheckpointError, match="FIFO"):
            blob.numpy()
        assert time.monotonic() - start < 2.0


def test_a_directory_where_out_should_be_is_an_error(tmp_path):
    root = saved(tmp_path)
    out = root / "other" / "out"
    out.unlink()
    out.mkdir()
    with pytest.raises(CheckpointError, match="is a directory, not a regular file") as err:
        flow.checkpoint.load(root)
    assert str(out) in str(err.value)
    unchanged()


def test_a_file_where_the_variable_directory_should_be_is_an_error(tmp_path):
    root = saved(tmp_path)
    directory = root / "other"
    for f in directory.iterdir():
        f.unlink()
    directory.rmdir()
    directory.write_bytes(b"\0" * 24)
    with pytest.raises(CheckpointError, match="not a directory") as err:
        flow.checkpoint.load(root)
    assert str(directory) in str(err.value)
    unchanged()


def test_a_dangling_link_is_an_error_not_missing(tmp_path):
    root = saved(tmp_path)
    out = root / "other" / "out"
    out.unlink()
    out.symlink_to(root / "other" / "gone")
    with pytest.raises(CheckpointError, match="does not exist") as err:
        flow.checkpoint.load(root)
    assert str(out) in str(err.value)
    unchanged()


def test_a_variable_without_a_directory_is_still_missing_and_initialised(tmp_path):
    root = saved(tmp_path)
    for f in (root / "other").iterdir():
        f.unlink()
    (root / "other").rmdir()
    with pytest.warns(UserWarning, match="CANNOT find variable path"):
        flow.checkpoint.load(root)
    values = flow.get_all_variables()
    np.testing.assert_array_equal(values["other"], np.full((2, 3), 0.5, np.float32))  # its initializer
    np.testing.assert_array_equal(values["layer-weight"], np.full((2, 3), 3, np.float32))
