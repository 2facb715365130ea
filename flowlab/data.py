"""``flow.data``: datasets in OneFlow's layout (``images[n, bs, 1, H, W]`` float32 in [0, 1], ``labels[n, bs]``
int32). MNIST is read from ``out_dir/mnist.npz`` when present and downloaded otherwise; the digits set ships with
scikit-learn (``pip install flowlab[digits]``), so examples and tests run offline."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from .errors import FlowlabError
from .flags import get

MNIST_URL = "https://oneflow-public.oss-cn-beijing.aliyuncs.com/datasets/mnist.npz"
# md5 of the standard mnist.npz (the tf-keras-datasets file, which OneFlow's mirror distributes too).
MNIST_MD5 = "8a61469f7ea1b51cbae51d4f78837e45"

Split = tuple[np.ndarray, np.ndarray]


class DatasetUnavailable(FlowlabError, OSError):
    """A dataset is neither on disk nor downloadable here."""


def _batches(images: np.ndarray, labels: np.ndarray, batch_size: int, data_format: str) -> Split:
    if batch_size <= 0:
        raise ValueError(f"batch size must be positive; got {batch_size}")
    n = len(images) // batch_size
    images = images[: n * batch_size].astype(np.float32)
    if images.ndim == 3:
        images = images[:, None, :, :]  # NCHW with one channel
    if data_format == "NHWC":
        images = images.transpose(0, 2, 3, 1)
    elif data_format != "NCHW":
        raise ValueError(f"data_format must be 'NCHW' or 'NHWC'; got {data_format!r}")
    images = np.ascontiguousarray(images.reshape(n, batch_size, *images.shape[1:]))
    return images, labels[: n * batch_size].astype(np.int32).reshape(n, batch_size)


def load_mnist(train_batch_size: int = 100, test_batch_size: int = 100, data_format: str = "NCHW",
               url: str = MNIST_URL, hash_check: bool = True, out_dir: str = ".") -> tuple[Split, Split]:
    """``((train_images, train_labels), (test_images, test_labels))`` as OneFlow's load_mnist returns them."""
    path = Path(out_dir) / "mnist.npz"
    if not path.is_file():
        _download(url, path)
    if hash_check and _md5(path) != MNIST_MD5:
        raise DatasetUnavailable(f"{path} is not the standard mnist.npz (expected md5 {MNIST_MD5}); delete it, "
                                 "or pass hash_check=False to use it anyway")
    with np.load(path) as data:
        x_train, y_train, x_test, y_test = (data[k] for k in ("x_train", "y_train", "x_test", "y_test"))
    return (_batches(x_train / 255.0, y_train, train_batch_size, data_format),
            _batches(x_test / 255.0, y_test, test_batch_size, data_format))


def _download(url: str, path: Path) -> None:
    import urllib.error  # here, not at import: urllib.request pulls in http and email (a tenth of `import flowlab`)
    import urllib.request

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=get("download_timeout")) as r:
            data = r.read()
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise DatasetUnavailable(
            f"mnist.npz is not in {path.parent.resolve()} and downloading {url} failed ({err}). Put mnist.npz "
            f"(keys x_train, y_train, x_test, y_test) at {path.resolve()}, or use flow.data.load_digits(), which "
            "needs no network"
        ) from err
    path.write_bytes(data)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def load_digits(batch_size: int = 100, test_fraction: float = 0.2, seed: int = 0,
                data_format: str = "NCHW") -> tuple[Split, Split]:
    """scikit-learn's 1,797 handwritten 8x8 digits in OneFlow's layout, shuffled with ``seed`` and split."""
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ImportError as err:
        raise DatasetUnavailable("load_digits needs scikit-learn: pip install 'flowlab[digits]'") from err
    digits = sk_load_digits()
    images = digits.images / 16.0  # pixel values are 0..16
    order = np.random.default_rng(seed).permutation(len(images))
    images, labels = images[order], digits.target[order]
    n_test = int(len(images) * test_fraction)
    train = _batches(images[n_test:], labels[n_test:], batch_size, data_format)
    test = _batches(images[:n_test], labels[:n_test], batch_size, data_format)
    return train, test
