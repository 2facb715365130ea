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
from .runtime.checkpoint_io import CheckpointError, load_variable, parse_meta, variable_dir
from .session import default_session


class VariableBlob:
    """One variable of a checkpoint on disk (OneFlow's FileBackendVariableBlob); read on ``numpy()``."""

    def __init__(self, root: Path, name: str) -> None:
        self.root, self.name = root, name
        self.shape, self.dtype = parse_meta((variable_dir(root, name) / "meta").read_text())

    def numpy(self) -> np.ndarray:
        return load_variable(self.root, self.name, self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"VariableBlob({self.name!r}, {self.dtype.name}{list(self.shape)})"


def get(path: str | os.PathLike[str]) -> dict[str, VariableBlob]:
    """The variables saved under ``path``, by name."""
    root = Path(path)
    if not root.is_dir():
        raise CheckpointError(f"checkpoint directory {root} does not exist")
    return {d.name: VariableBlob(root, d.name) for d in sorted(root.iterdir()) if (d / "meta").is_file()}


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
    session.try_init()
    live = session.variable_arrays()
    staged = {}
    for name, value in value_dict.items():
        if name not in live:
            if ignore_mismatch:
                continue
            raise CheckpointError(f"load_variables: no variable {name!r}; variables are {sorted(live)}")
        array = value.numpy() if isinstance(value, VariableBlob) else np.asarray(value)
        if array.shape != live[name].shape:
            raise CheckpointError(f"load_variables: variable {name!r} is {list(live[name].shape)}; "
                                  f"got shape {list(array.shape)}")
        staged[name] = array
    for name, array in staged.items():  # only after every value checked: nothing half-loaded
        live[name][...] = array.astype(live[name].dtype, copy=False)


def dtype_of(array: np.ndarray) -> DType:
    return from_numpy(array.dtype)
