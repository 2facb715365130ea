"""Lazy blobs: what op functions return while a job is traced (OneFlow's LazyConsistentBlob)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir import BlobDesc, DType

if TYPE_CHECKING:
    from .builder import JobBuilder


class LazyBlob:
    """A named blob of the job being built: its lbn and its inferred shape and dtype. Holds no data."""

    __slots__ = ("lbn", "blob_desc", "builder")

    def __init__(self, lbn: str, blob_desc: BlobDesc, builder: JobBuilder) -> None:
        self.lbn = lbn
        self.blob_desc = blob_desc
        self.builder = builder

    @property
    def logical_blob_name(self) -> str:
        return self.lbn

    @property
    def op_name(self) -> str:
        return self.lbn.rpartition("/")[0]

    @property
    def blob_name(self) -> str:
        return self.lbn.rpartition("/")[2]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.blob_desc.shape

    @property
    def dtype(self) -> DType:
        return self.blob_desc.dtype

    @property
    def is_dynamic(self) -> bool:
        return self.blob_desc.is_dynamic

    def __repr__(self) -> str:
        return f"LazyBlob(lbn={self.lbn!r}, {self.blob_desc})"

    # Arithmetic builds ops, as in OneFlow (``a + b`` is ``flow.math.add(a, b)``).
    def _math(self, name: str, *args: Any) -> LazyBlob:
        from ..ops import math_ops

        return getattr(math_ops, name)(*args)

    def __add__(self, other: Any) -> LazyBlob:
        return self._math("add", self, other)

    def __radd__(self, other: Any) -> LazyBlob:
        return self._math("add", other, self)

    def __sub__(self, other: Any) -> LazyBlob:
        return self._math("subtract", self, other)

    def __rsub__(self, other: Any) -> LazyBlob:
        return self._math("subtract", other, self)

    def __mul__(self, other: Any) -> LazyBlob:
        return self._math("multiply", self, other)

    def __rmul__(self, other: Any) -> LazyBlob:
        return self._math("multiply", other, self)

    def __truediv__(self, other: Any) -> LazyBlob:
        return self._math("divide", self, other)

    def __rtruediv__(self, other: Any) -> LazyBlob:
        return self._math("divide", other, self)

    def __neg__(self) -> LazyBlob:
        return self._math("negative", self)
