"""Datasets in OneFlow's layout; MNIST offline."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
from flowlab.data import DatasetUnavailable


def fake_mnist(path, n_train=250, n_test=120):
    rng = np.random.default_rng(0)
    np.savez(path, x_train=rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
             y_train=rng.integers(0, 10, n_train), x_test=rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
             y_test=rng.integers(0, 10, n_test))


def test_load_mnist_reads_out_dir_in_oneflow_layout(tmp_path):
    fake_mnist(tmp_path / "mnist.npz")
    (train_x, train_y), (test_x, test_y) = flow.data.load_mnist(100, 50, out_dir=str(tmp_path), hash_check=False)
    assert train_x.shape == (2, 100, 1, 28, 28) and train_x.dtype == np.float32
    assert train_y.shape == (2, 100) and train_y.dtype == np.int32
    assert test_x.shape == (2, 50, 1, 28, 28) and test_y.shape == (2, 50)
    with np.load(tmp_path / "mnist.npz") as raw:
        np.testing.assert_allclose(train_x[1, 3, 0], raw["x_train"][103] / 255.0, rtol=1e-6)
        assert train_y[1, 3] == raw["y_train"][103]
    assert 0.0 <= train_x.min() and train_x.max() <= 1.0


def test_load_mnist_hash_check_rejects_other_files(tmp_path):
    fake_mnist(tmp_path / "mnist.npz")
    with pytest.raises(DatasetUnavailable, match="not the standard mnist.npz"):
        flow.data.load_mnist(out_dir=str(tmp_path))


def test_load_mnist_offline_says_where_to_put_the_file(tmp_path):
    with pytest.raises(DatasetUnavailable, match=r"Put mnist.npz .* at .*mnist.npz, or use flow.data.load_digits"):
        flow.data.load_mnist(out_dir=str(tmp_path), url="http://127.0.0.1:9/mnist.npz")


def test_load_digits_layout_and_split():
    (train_x, train_y), (test_x, test_y) = flow.data.load_digits(batch_size=50)
    assert train_x.shape == (28, 50, 1, 8, 8) and test_x.shape == (7, 50, 1, 8, 8)
    assert train_y.dtype == np.int32 and set(np.unique(train_y)) == set(range(10))
    assert 0.0 <= train_x.min() and train_x.max() <= 1.0
    again = flow.data.load_digits(batch_size=50)[0][0]
    np.testing.assert_array_equal(train_x, again)  # deterministic shuffle
