"""``flowlab.typing`` (``import flowlab.typing as tp``): placeholders for job inputs and return annotations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .ir import BlobDesc, DType
from .ir.dtype import as_dtype, float32
from .ir.mirrored import MirroredList as MirroredList  # a mirrored return as pulled (ir/: the runtime builds it)

T = TypeVar("T")


@dataclass(frozen=True)
class FixedTensorDef:
    """An input of exactly this shape and dtype (``tp.Numpy.Placeholder``)."""

    shape: tuple[int, ...]
    dtype: DType = float32
    batch_axis: int | None = 0

    def __post_init__(self) -> None:
        shape = self.shape
        if not isinstance(shape, (tuple, list)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
        ):
            raise TypeError(f"a placeholder shape must be a tuple of positive ints; got {shape!r}")
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", as_dtype(self.dtype))

    @property
    def blob_desc(self) -> BlobDesc:
        return BlobDesc(self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"Numpy.Placeholder({self.shape}, dtype={self.dtype!r})"


@dataclass(frozen=True)
class MirroredTensorDef(FixedTensorDef):
    """One ndarray per device (``tp.ListNumpy.Placeholder``): a dynamic blob, each piece of the placeholder's rank
    with at most its element count (runtime/dynamic.py)."""

    def __repr__(self) -> str:
        return f"ListNumpy.Placeholder({self.shape}, dtype={self.dtype!r})"


@dataclass(frozen=True)
class MirroredTensorListDef(MirroredTensorDef):
    """Per device a list of tensors (``tp.ListListNumpy.Placeholder``, OneFlow's tensor list). flowlab takes the
    list of one tensor per device, a dynamic blob up to the placeholder's size; a list of several tensors is not
    built (docs/oneflow-api.md)."""

    def __repr__(self) -> str:
        return f"ListListNumpy.Placeholder({self.shape}, dtype={self.dtype!r})"


class Numpy:
    """As an input: ``tp.Numpy.Placeholder(shape, dtype)``; as a return annotation: a numpy.ndarray."""

    @staticmethod
    def Placeholder(shape: Sequence[int], dtype: DType = float32, batch_axis: int | None = 0) -> FixedTensorDef:
        return FixedTensorDef(tuple(shape), dtype, batch_axis)


class ListNumpy:
    """As an input: a list with one ndarray per device; as a return annotation: such a list."""

    @staticmethod
    def Placeholder(shape: Sequence[int], dtype: DType = float32, batch_axis: int | None = 0) -> MirroredTensorDef:
        return MirroredTensorDef(tuple(shape), dtype, batch_axis)


class ListListNumpy:
    """As an input: per device, a list of tensors (flowlab: a list of one); as a return annotation: per device,
    a list of its tensors (``[[piece] for each device]``)."""

    @staticmethod
    def Placeholder(shape: Sequence[int], dtype: DType = float32,
                    batch_axis: int | None = 0) -> MirroredTensorListDef:
        return MirroredTensorListDef(tuple(shape), dtype, batch_axis)


class Callback(Generic[T]):
    """``-> tp.Callback[tp.Numpy]``: the call returns ``f``; ``f(cb)`` has ``cb`` called with the result."""


class Bundle(Generic[T]):
    """``-> tp.Bundle[tp.Numpy]``: a blob, or a tuple/list/dict nesting of blobs, returned as such."""


__all__ = ["Bundle", "Callback", "FixedTensorDef", "ListListNumpy", "ListNumpy", "MirroredTensorDef",
           "MirroredTensorListDef", "Numpy"]
