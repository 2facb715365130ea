"""OneFlow v0.3 checkpoint layout: a directory per variable holding raw bytes in ``out`` and a text ``meta``."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import FlowlabError
from ..ir import DType
from ..ir.dtype import by_proto_name, from_numpy


class CheckpointError(FlowlabError, ValueError):
    """A checkpoint directory is missing, truncated, or does not match the variables."""


def variable_dir(root: Path, name: str) -> Path:
    target = (root / name).resolve()
    if root.resolve() not in target.parents:
        raise CheckpointError(f"variable name {name!r} escapes the checkpoint directory {root}")
    return target


def meta_text(shape: tuple[int, ...], dtype: DType) -> str:
    dims = " ".join(f"dim: {d}" for d in shape)
    return f"shape {{\n  {dims}\n}}\ndata_type: {dtype.proto_name}\n"


def parse_meta(text: str) -> tuple[tuple[int, ...], DType]:
    dims = tuple(int(d) for d in re.findall(r"dim:\s*(-?\d+)", text))
    match = re.search(r"data_type:\s*(\w+)", text)
    if match is None:
        raise CheckpointError(f"meta has no data_type: {text!r}")
    return dims, by_proto_name(match[1])


def save_variable(root: Path, name: str, value: np.ndarray) -> None:
    directory = variable_dir(root, name)
    directory.mkdir(parents=True, exist_ok=True)
    np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False).tofile(directory / "out")
    (directory / "meta").write_text(meta_text(value.shape, from_numpy(value.dtype)))


def load_variable(root: Path, name: str, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    directory = variable_dir(root, name)
    out = directory / "out"
    if not out.is_file():
        raise CheckpointError(f"checkpoint {root} has no variable {name!r} (expected the file {out})")
    meta = directory / "meta"
    if meta.is_file():
        saved_shape, saved_dtype = parse_meta(meta.read_text())
        if saved_shape != tuple(shape) or saved_dtype != dtype:
            raise CheckpointError(
                f"variable {name!r} in {root} is {saved_dtype.name}{list(saved_shape)}, "
                f"but the job's variable is {dtype.name}{list(shape)}"
            )
    expected = int(np.prod(shape)) * dtype.itemsize
    size = out.stat().st_size
    if size != expected:
        raise CheckpointError(
            f"variable {name!r}: {out} holds {size} bytes; {dtype.name}{list(shape)} needs {expected}"
        )
    return np.fromfile(out, dtype=dtype.np.newbyteorder("<")).astype(dtype.np).reshape(shape)
