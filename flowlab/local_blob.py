"""The local blob a call hands back where no annotation asks for a plain array (OneFlow's ``local_blob.py``):
``job(x).get()`` of a job without a return annotation, an unannotated ``flow.watch``/``flow.watch_diff`` handler's
argument, and each value of ``flow.get_all_variables()``.

OneFlow's ``LocalMirroredTensor`` holds one ndarray per device and answers ``numpy()`` (the pieces joined on their
axis, or the single piece), ``numpy_list()`` (the pieces) and, for everything else, the ndarray's own attributes and
operators. flowlab's is an ``np.ndarray`` subclass viewing the joined value, so it is also usable wherever an array
was (``np.testing``, arithmetic, ``.shape``), and carries the pieces beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class LocalMirroredTensor(np.ndarray):
    """A pulled blob: ``numpy()`` the whole value, ``numpy_list()`` one array per device (a consistent blob or a
    blob of one device: a list of one), ``numpy(i)`` device ``i``'s piece."""

    # the devices' pieces; a view, slice or copy of a pulled blob is an array of its own (no __array_finalize__
    # copies this): its only piece is itself
    _pieces: tuple[np.ndarray, ...] | None = None

    def __new__(cls, pieces: Sequence[np.ndarray] | None, logical: np.ndarray) -> LocalMirroredTensor:
        """``pieces``: one array per device, or None for a blob of one piece (itself)."""
        obj = (logical if type(logical) is np.ndarray else np.asarray(logical)).view(cls)
        if pieces is not None:
            obj._pieces = tuple(pieces)
        return obj

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # arithmetic on a pulled blob gives plain arrays (OneFlow's forwards to ``numpy()``'s operators)
        plain = tuple(x.view(np.ndarray) if isinstance(x, LocalMirroredTensor) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, LocalMirroredTensor) else x
                                  for x in kwargs["out"])
        return getattr(ufunc, method)(*plain, **kwargs)

    def numpy(self, parallel_id: int | None = None) -> np.ndarray:
        """The whole blob, or with ``parallel_id`` the piece of that device (OneFlow's ``numpy(parallel_id)``)."""
        if parallel_id is None:
            return self.view(np.ndarray)
        pieces = self.numpy_list()
        if not isinstance(parallel_id, int) or not 0 <= parallel_id < len(pieces):
            raise IndexError(f"numpy(parallel_id) takes a device index 0..{len(pieces) - 1}; got {parallel_id!r}")
        return pieces[parallel_id]

    def numpy_list(self) -> list[np.ndarray]:
        """One ndarray per device, in device order."""
        return list(self._pieces) if self._pieces is not None else [self.view(np.ndarray)]

    def parallel_num(self) -> int:
        return len(self._pieces) if self._pieces is not None else 1

    @property
    def is_dynamic(self) -> bool:
        return False  # flowlab's blobs have static shapes (docs/oneflow-api.md)

    def __reduce__(self) -> Any:  # pickles (and deep-copies) as the plain array it views
        return self.view(np.ndarray).__reduce__()


def local_blob(value: Any) -> LocalMirroredTensor:
    """A pulled value as a local blob: a mirrored pull (a list of pieces with ``.logical``) or one array."""
    if type(value) is np.ndarray:  # the common case, as cheap as a view (a watch hands one over every call)
        return value.view(LocalMirroredTensor)
    if isinstance(value, list):
        return LocalMirroredTensor(value, value.logical)  # type: ignore[attr-defined]
    return LocalMirroredTensor(None, value)


__all__ = ["LocalMirroredTensor", "local_blob"]
