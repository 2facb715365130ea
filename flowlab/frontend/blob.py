"""Lazy blobs: what op functions return while a job is traced (OneFlow's LazyConsistentBlob)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir import BlobDesc, DType
from ..ir.sbp import SbpParallel

if TYPE_CHECKING:
    from .builder import JobBuilder

# OneFlow's "no such axis" answers of blob.batch_axis and blob.split_axis (py_blob_desc.h)
INVALID_BATCH_AXIS = -22
INVALID_SPLIT_AXIS = -22


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

    @property
    def batch_axis(self) -> int:
        """The axis the batch runs along (a placeholder's ``batch_axis``, carried through the ops as the SBP pass
        carries it), or ``flow.INVALID_BATCH_AXIS`` where the blob has none (a variable, a reduced batch)."""
        return self._producer_view()[0]

    @property
    def split_axis(self) -> int:
        """The axis its producer splits it on over the devices (S(axis); one device: 0, as OneFlow), or
        ``flow.INVALID_SPLIT_AXIS`` where it lies whole (B) or as partial sums (P)."""
        return self._producer_view()[1]

    def _producer_view(self) -> tuple[int, int]:
        from ..compiler.blob_view import producer_view  # the SBP rules sit above the front end

        batch, split = producer_view(self.builder.build(), self.lbn)
        return (INVALID_BATCH_AXIS if batch is None else batch, INVALID_SPLIT_AXIS if split is None else split)

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

    # Comparisons and % build ops too (OneFlow's blob operators): ``a == b`` is a blob, not a bool, so hashing
    # stays by identity (a blob is a dict key in the builder and the debugger).
    __hash__ = object.__hash__

    def __eq__(self, other: Any) -> LazyBlob:  # type: ignore[override]
        return self._compare("equal", other)

    def __ne__(self, other: Any) -> LazyBlob:  # type: ignore[override]
        return self._compare("not_equal", other)

    def __lt__(self, other: Any) -> LazyBlob:
        return self._compare("less", other)

    def __le__(self, other: Any) -> LazyBlob:
        return self._compare("less_equal", other)

    def __gt__(self, other: Any) -> LazyBlob:
        return self._compare("greater", other)

    def __ge__(self, other: Any) -> LazyBlob:
        return self._compare("greater_equal", other)

    def __mod__(self, other: Any) -> LazyBlob:
        return self._compare("floor_mod", other)

    def _compare(self, name: str, other: Any) -> LazyBlob:
        from ..ops import compare_ops

        if name in ("equal", "not_equal") and not isinstance(other, (LazyBlob, int, float)):
            return NotImplemented  # ``blob == None`` / ``blob in [None, ...]``: identity, as for any object

        return getattr(compare_ops, name)(self, other)
