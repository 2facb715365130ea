"""Lazy blobs: what op functions return while a job is traced (OneFlow's LazyConsistentBlob)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir import BlobDesc, DType
from ..ir.sbp import SbpParallel

if TYPE_CHECKING:
    from .builder import JobBuilder


class LazyBlob:
    """A named blob of the job being built: its lbn and its inferred shape and dtype. Holds no data."""

    __slots__ = ("lbn", "blob_desc", "builder", "distribute")

    def __init__(self, lbn: str, blob_desc: BlobDesc, builder: JobBuilder, distribute: SbpParallel | None = None
                 ) -> None:
        self.lbn = lbn
        self.blob_desc = blob_desc
        self.builder = builder
        # OneFlow's Python-side distribute tag (``blob.with_distribute``): a hint for the ops that consume this
        # handle, not the blob's inferred SBP; None is OneFlow's ``auto``
        self.distribute = distribute

    def with_distribute(self, distribute: Any) -> LazyBlob:
        """A handle on the same blob that asks its consumers to take it with this SBP (a filter on their
        signatures): ``x.with_distribute(flow.distribute.split(0))``."""
        from .hints import as_sbp_hint
        from .location import user_location

        sbp = as_sbp_hint(distribute, self.blob_desc.shape, f"{self.lbn}.with_distribute", user_location())
        return LazyBlob(self.lbn, self.blob_desc, self.builder, sbp)

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
        hint = f", distribute={self.distribute}" if self.distribute is not None else ""
        return f"LazyBlob(lbn={self.lbn!r}, {self.blob_desc}{hint})"

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
