"""OneFlow v0.3 checkpoint layout: a directory per variable holding raw bytes in ``out`` and a text ``meta``.

A variable's directory is ``<root>/<name>``, joined as OneFlow's ``os.path.join`` joins it, so a name with ``/``
(``a/b``) is a nested directory (``<root>/a/b/out``). Every file read must resolve inside the checkpoint
directory: a symbolic link pointing elsewhere is refused, as is a name with an empty, ``.`` or ``..`` part.

Loading follows OneFlow's ModelLoad kernel: a variable whose ``out`` file is missing is initialized with its own
initializer and seed (what System-ModelInit gives it) after the warning OneFlow prints; anything else wrong
(shape, dtype, size, an unreadable ``meta``, a file that is there but is not a regular file) is an error that names
the file, before anything is written. Files are checked with ``os.stat`` before they are opened, so a FIFO or a
device file is refused, never read (opening a FIFO would wait for a writer).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..errors import FlowlabError
from ..ir import DType
from ..ir.dtype import by_proto_name, from_numpy

DATA_FILE, META_FILE = "out", "meta"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CheckpointError(FlowlabError, ValueError):
    """A checkpoint directory is missing, truncated, or does not match the variables."""


class MissingVariableWarning(UserWarning):
    """A variable is not in the checkpoint being loaded; it is initialized instead (OneFlow's fine-tune rule)."""


def check_root(root: Path, action: str) -> None:
    """``root`` must be a directory to load from (``action="load"``), or absent or a directory to save into."""
    if root.exists() and not root.is_dir():
        raise CheckpointError(f"checkpoint path {root} is a file, not a directory; flow.checkpoint.{action} "
                              f"needs {'a new or empty' if action == 'save' else 'a checkpoint'} directory")
    if action != "save" and not root.exists():
        raise CheckpointError(f"checkpoint directory {root} does not exist")


def variable_dir(root: Path, name: str) -> Path:
    """``<root>/<name>``; refused unless ``name`` is a plain relative path (``a`` or ``a/b``) inside ``root``."""
    if name.startswith("/") or any(p in ("", ".", "..") for p in name.split("/")):
        raise CheckpointError(f"variable name {name!r} escapes the checkpoint directory {root} or is not a plain "
                              "path under it (its '/'-separated parts must not be empty, '.' or '..')")
    return _inside(root, root / name)


def _inside(root: Path, path: Path) -> Path:
    """``path``, after checking that it (following any symbolic links) stays inside ``root``."""
    resolved = path.resolve()
    if root.resolve() not in resolved.parents:
        raise CheckpointError(f"{path} resolves to {resolved}, outside the checkpoint directory {root}; "
                              "flowlab reads only files inside the checkpoint")
    return path


def regular_file(root: Path, path: Path) -> os.stat_result | None:
    """``os.stat`` of the checkpoint file ``path`` once it is checked to be a regular file inside ``root``, without
    opening it; None when nothing is there. Anything else there is an error naming it: a FIFO, a socket, a device
    or a directory, a link to nothing, a file where a directory of the path should be."""
    if os.path.lexists(path):
        _inside(root, path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            raise CheckpointError(f"{path} is a symbolic link to {os.readlink(path)}, which does not exist; "
                                  "nothing was loaded") from None
        return None
    except NotADirectoryError:
        parent = next(p for p in path.parents if p.exists() and not p.is_dir())
        raise CheckpointError(f"{parent} is not a directory, so {path} cannot be read; a checkpoint holds a "
                              "directory per variable; nothing was loaded") from None
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointError(f"{path} is {_file_kind(st.st_mode)}, not a regular file; a checkpoint's '{path.name}' "
                              "must be a regular file (flowlab does not open it); nothing was loaded")
    return st


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), f"a special file (mode {mode:#o})")


def meta_text(shape: tuple[int, ...], dtype: DType) -> str:
    dims = " ".join(f"dim: {d}" for d in shape)
    return f"shape {{\n  {dims}\n}}\ndata_type: {dtype.proto_name}\n"


def read_meta(root: Path, path: Path) -> tuple[tuple[int, ...], DType]:
    """Shape and dtype from a ``meta`` file; every problem is an error naming the file."""
    if regular_file(root, path) is None:
        raise CheckpointError(f"{path} does not exist; a meta file holds a text-format VariableMetaInfo")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CheckpointError(f"{path} is not UTF-8 text (byte {raw[err.start]:#04x} at offset {err.start}); "
                              "a meta file holds a text-format VariableMetaInfo") from None
    try:
        return parse_meta(text)
    except (CheckpointError, ValueError) as err:
        raise CheckpointError(f"{path}: {err}") from None


def parse_meta(text: str) -> tuple[tuple[int, ...], DType]:
    dims = tuple(int(d) for d in re.findall(r"dim:\s*(-?\d+)", text))
    match = re.search(r"data_type:\s*(\w+)", text)
    if match is None:
        raise CheckpointError(f"meta has no data_type: {text!r}")
    return dims, by_proto_name(match[1])


def save_variable(root: Path, name: str, value: np.ndarray) -> None:
    directory = variable_dir(root, name)
    directory.mkdir(parents=True, exist_ok=True)
    np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False).tofile(directory / DATA_FILE)
    (directory / META_FILE).write_text(meta_text(value.shape, from_numpy(value.dtype)))


def save_variable_slice(root: Path, name: str, piece: np.ndarray, shape: tuple[int, ...],
                        index: tuple[slice, ...]) -> None:
    """One device's slice ``index`` of a variable of logical ``shape`` split over devices, written into the
    variable's one ``out`` file. The file is made full size without truncating (the devices' tasks may write in
    any order, or at once), so every slice lands where a whole save would put it."""
    directory = variable_dir(root, name)
    directory.mkdir(parents=True, exist_ok=True)
    dtype = piece.dtype.newbyteorder("<")
    nbytes = int(np.prod(shape)) * dtype.itemsize
    fd = os.open(directory / DATA_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size < nbytes:
            os.ftruncate(fd, nbytes)
    finally:
        os.close(fd)
    whole = np.memmap(directory / DATA_FILE, dtype=dtype, mode="r+", shape=shape)
    whole[index] = piece
    whole.flush()
    del whole
    (directory / META_FILE).write_text(meta_text(shape, from_numpy(piece.dtype)))


def check_variable(root: Path, name: str, shape: tuple[int, ...], dtype: DType) -> Path | None:
    """The ``out`` file of variable ``name`` once its meta, size and location are checked; None when the
    checkpoint has no ``out`` for it (OneFlow's ``SnapshotReader::HasKey`` is false)."""
    directory = variable_dir(root, name)
    out = directory / DATA_FILE
    out_stat = regular_file(root, out)
    if out_stat is None:
        return None
    meta = directory / META_FILE
    if os.path.lexists(meta):
        saved_shape, saved_dtype = read_meta(root, meta)
        if saved_shape != tuple(shape) or saved_dtype != dtype:
            raise CheckpointError(
                f"variable {name!r} in {root} is {saved_dtype.name}{list(saved_shape)} (says {meta}), "
                f"but the job's variable is {dtype.name}{list(shape)}"
            )
    expected = int(np.prod(shape)) * dtype.itemsize
    size = out_stat.st_size
    if size != expected:
        raise CheckpointError(
            f"variable {name!r}: {out} holds {size} bytes; {dtype.name}{list(shape)} needs {expected}"
        )
    return out


def read_data(out: Path, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    return np.fromfile(out, dtype=dtype.np.newbyteorder("<")).astype(dtype.np).reshape(shape)


def load_variable(root: Path, name: str, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    """Variable ``name``'s values from the checkpoint; an error when it is not there."""
    out = check_variable(root, name, shape, dtype)
    if out is None:
        raise CheckpointError(f"checkpoint {root} has no variable {name!r} (expected the file "
                              f"{variable_dir(root, name) / DATA_FILE})")
    return read_data(out, shape, dtype)


def missing_message(root: Path, name: str) -> str:
    """OneFlow's ModelLoad warning, word for word (``JoinPath(path, "<var>/out")``)."""
    return f"WARNING! CANNOT find variable path in : {root / name / DATA_FILE}. It will be initialized."


def check_load(root: Path, variables: Mapping[str, np.ndarray]) -> list[str]:
    """Check every variable's files before System-ModelLoad writes anything; warn once for each variable the
    checkpoint lacks (the load initializes it) and return their names."""
    check_root(root, "load")
    missing = [name for name, array in variables.items()
               if check_variable(root, name, array.shape, from_numpy(array.dtype)) is None]
    for name in missing:
        warnings.warn(missing_message(root, name), MissingVariableWarning, stacklevel=_user_stacklevel())
    return missing


def _user_stacklevel() -> int:
    """The stacklevel of the innermost caller outside flowlab, so a warning points at the user's line."""
    frame, level = sys._getframe(2), 2  # 1 is check_load itself
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    return level
