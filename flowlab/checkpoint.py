"""``flow.checkpoint``: OneFlow v0.3's checkpoint API and on-disk format (a directory per variable, raw
little-endian bytes in ``out`` and a text ``meta``). Saving and loading run the System-ModelSave and
System-ModelLoad jobs, so they show in the Plan and in the debugger like any job."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .ir import DType
from .ir.dtype import from_numpy
from .runtime.checkpoint_io import (
    DATA_FILE,
    META_FILE,
    CheckpointError,
    check_root,
    load_variable,
    read_meta,
    variable_dir,
)
from .session import default_session


class VariableBlob:
    """One variable of a checkpoint on disk (OneFlow's FileBackendVariableBlob). Its ``meta`` is read on first
    use of ``shape``/``dtype`` and its ``out`` on ``numpy()``, so one bad entry fails alone, naming its file."""

    def __init__(self, root: Path, name: str) -> None:
        self.root, self.name = root, name
        self._meta: tuple[tuple[int, ...], DType] | None = None

    def _read_meta(self) -> tuple[tuple[int, ...], DType]:
        if self._meta is None:
            meta = variable_dir(self.root, self.name) / META_FILE
            if not meta.exists() and not meta.is_symlink():
                raise CheckpointError(f"variable {self.name!r} in {self.root} has no {meta}, so its shape and "
                                      "dtype are unknown")
            self._meta = read_meta(self.root, meta)
        return self._meta

    @property
    def shape(self) -> tuple[int, ...]:
        return self._read_meta()[0]

    @property
    def dtype(self) -> DType:
        return self._read_meta()[1]

    def numpy(self) -> np.ndarray:
        return load_variable(self.root, self.name, self.shape, self.dtype)

    def __repr__(self) -> str:
        try:
            return f"VariableBlob({self.name!r}, {self.dtype.name}{list(self.shape)})"
        except CheckpointError as err:
            return f"VariableBlob({self.name!r}, unreadable: {err})"


def get(path: str | os.PathLike[str]) -> dict[str, VariableBlob]:
    """The variables saved under ``path``, by name: every directory below it holding an ``out`` or a ``meta``
    file, named by its path relative to ``path`` (``a/b`` for ``<path>/a/b/out``, as OneFlow saves ``a/b``)."""
    root = Path(path)
    check_root(root, "get")
    found: dict[str, VariableBlob] = {}

    def walk(directory: Path, prefix: str) -> None:
        for entry in sorted(directory.iterdir()):
            if not entry.is_dir():
                continue
            name = prefix + entry.name
            if any((entry / f).exists() or (entry / f).is_symlink() for f in (DATA_FILE, META_FILE)):
                found[name] = VariableBlob(root, name)
            if not entry.is_symlink():  # a linked directory is read (and refused if outside), never walked
                walk(entry, name + "/")

    walk(root, "")
    return found


def save(path: str | os.PathLike[str]) -> None:
    """Save every variable of the default session under ``path`` (which must be new or empty)."""
    session = default_session()
    session.try_init()
    session.save_checkpoint(Path(path))


def load(path: str | os.PathLike[str]) -> None:
    """Load every variable of the default session from ``path`` (all are checked before any is written)."""
    session = default_session()
    session.try_init()
    session.load_checkpoint(Path(path))


def load_variables(value_dict: Mapping[str, Any], ignore_mismatch: bool = True) -> None:
    """Set variables from numpy arrays (or checkpoint blobs) by name; unknown names are ignored unless
    ``ignore_mismatch=False``. Shapes must match; values are cast to the variable's dtype."""
    session = default_session()
    with session.lock:  # between two calls of any thread, never inside one
        session.try_init()
        live = session.variables()  # every device's piece of each variable
        staged = {}
        for name, value in value_dict.items():
            if name not in live:
                if ignore_mismatch:
                    continue
                raise CheckpointError(f"load_variables: no variable {name!r}; variables are {sorted(live)}")
            array = value.numpy() if isinstance(value, VariableBlob) else np.asarray(value)
            if array.shape != tuple(live[name].shape):
                raise CheckpointError(f"load_variables: variable {name!r} is {list(live[name].shape)}; "
                                      f"got shape {list(array.shape)}")
            try:  # cast while checking, so a value that cannot be cast leaves every variable as it was
                staged[name] = array.astype(live[name].dtype, copy=False)
            except (TypeError, ValueError) as err:
                raise CheckpointError(f"load_variables: variable {name!r} is {live[name].dtype}; got a value of "
                                      f"dtype {array.dtype} that cannot be cast: {err}") from err
        for name, array in staged.items():  # only after every value checked: nothing half-loaded
            live[name].write(array)
        if session.runtime is not None:
            session.runtime.push_variables()  # pieces on other machines' processes (nothing to push in-process)


def dtype_of(array: np.ndarray) -> DType:
    return from_numpy(array.dtype)
