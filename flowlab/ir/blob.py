"""BlobDesc: the logical shape and dtype of one blob (OneFlow's BlobDesc), and lbn helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .dtype import DType


@dataclass(frozen=True)
class BlobDesc:
    shape: tuple[int, ...]
    dtype: DType
    # OneFlow's dynamic blob: the shape is an upper bound, the current one travels in the register's header
    # (runtime/dynamic.py). Not part of equality: inference rules compare shapes and dtypes.
    is_dynamic: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def elem_cnt(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elem_cnt * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        return f"BlobDesc({self})"


def split_lbn(lbn: str) -> tuple[str, str]:
    """``"pad/y_0"`` -> ``("pad", "y_0")``: the producing op and its blob name."""
    op_name, sep, blob_name = lbn.rpartition("/")
    if not sep or not op_name:
        raise ValueError(f"malformed lbn {lbn!r}; expected '<op_name>/<blob_name>'")
    return op_name, blob_name
