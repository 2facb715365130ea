"""Blob inspection: statistics of the finite values, NaN/Inf counts, a preview and a histogram of a live register.

NaN and Inf are counted, never folded into the statistics: ``min``/``max``/``mean``/``std`` and the histogram are
over the finite values only, so a blob with one NaN still shows where the rest of its values lie.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir import dtype as dtypes

VALUES_SENT = 64  # values a widget state or a payload carries (the first ones, flattened)


def short_dtype(dtype: np.dtype) -> str:
    """'f32', 'i64', ... as the IR prints blob descs."""
    try:
        return dtypes.from_numpy(dtype).short
    except (KeyError, ValueError, TypeError):  # a numpy dtype flowlab has no name for
        return str(dtype)


@dataclass(frozen=True)
class BlobStats:
    """One blob of a live register, as ``dbg.blob(name)`` returns it.

    The statistics are taken when it is made; ``np.asarray(blob)`` is the register's live array itself (a view
    into the memory block: later acts change it), ``dbg.value(name)`` a copy. ``written`` is False while no act
    of this run has written the register yet: its bytes are then whatever the block held (zeros, or another
    register's values where memory is reused), not this blob's values.
    """

    lbn: str
    shape: tuple[int, ...]
    dtype: str
    min: float | None  # of the finite values; None when there are none
    max: float | None
    mean: float | None
    std: float | None
    nan_count: int
    inf_count: int
    preview: str
    histogram: tuple[tuple[float, ...], tuple[int, ...]] | None  # (bin edges, counts) of the finite values
    finite_count: int = 0
    written: bool = True
    regst: int | None = None  # the register desc id holding it
    array: np.ndarray | None = field(default=None, repr=False, compare=False)
    # the register is in GPU memory: the statistics and ``array`` are of a host copy taken when it was made
    # (writing to ``array`` does not reach the device; ``dbg.inject`` does)
    on_device: bool = False
    # a dynamic blob (runtime/dynamic.py): its static shape (the register's), beside ``shape``, its current one
    static_shape: tuple[int, ...] | None = None

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if self.array is None:
            raise ValueError(f"blob {self.lbn} carries no live array")
        if copy:
            return np.array(self.array, dtype=dtype, copy=True)
        return self.array if dtype is None else self.array.astype(dtype, copy=False)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __str__(self) -> str:
        where = f" (r{self.regst})" if self.regst is not None else ""
        if self.on_device:
            where += " [GPU memory, copied to the host]"
        head = f"{self.lbn}{where} : {self.dtype}{list(self.shape)}"
        if self.static_shape is not None:
            head += f" (dynamic: static {list(self.static_shape)})"
        if not self.written:
            return f"{head}\n  not yet written in this run (its bytes are not this blob's values yet)"
        if self.size == 0:
            return f"{head} (empty)"
        bad = f"nan {self.nan_count} inf {self.inf_count}"
        if self.min is None:
            return f"{head}\n  no finite values: {bad}\n  {self.preview}"
        of = "" if self.finite_count == self.size else f" (of the {self.finite_count} finite values)"
        stats = (f"min {self.min:.6g} max {self.max:.6g} mean {self.mean:.6g} std {self.std:.4g}{of}; {bad}")
        return f"{head}\n  {stats}\n  {self.preview}"

    def stats_dict(self) -> dict[str, Any]:
        """Act/widget statistics (payload.md): finite min/max/mean, NaN and Inf counts, shape and short dtype."""
        return {"shape": list(self.shape), "dtype": self.dtype, "min": self.min, "max": self.max,
                "mean": self.mean, "nan": self.nan_count, "inf": self.inf_count}

    def to_dict(self) -> dict[str, Any]:
        """The widget's ``inspected`` state: stats, the finite values' histogram and the first values."""
        values: list[Any] = []
        if self.array is not None and self.written:
            flat = np.asarray(self.array).reshape(-1)[:VALUES_SENT]
            values = [_json_number(v) for v in flat.tolist()]
        edges, counts = self.histogram if self.histogram else ((), ())
        return {"regst": f"r:{self.regst}" if self.regst is not None else None, "lbn": self.lbn,
                "shape": list(self.shape), "dtype": self.dtype, "written": self.written,
                "static_shape": None if self.static_shape is None else list(self.static_shape),
                "stats": {"min": self.min, "max": self.max, "mean": self.mean, "std": self.std,
                          "nan": self.nan_count, "inf": self.inf_count, "finite": self.finite_count},
                "histogram": {"edges": list(edges), "counts": list(counts)}, "values": values}


def _json_number(v: Any) -> Any:
    """JSON has no NaN/Inf: they travel as the strings "NaN", "Infinity", "-Infinity" (as in flowlab.viz.payload)."""
    if isinstance(v, float) and not np.isfinite(v):
        return "NaN" if np.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return v


def finite_stats(array: np.ndarray) -> tuple[int, int, np.ndarray]:
    """(NaN count, Inf count, the finite values) of any array; integers have no NaN or Inf."""
    values = np.asarray(array)
    if values.dtype.kind not in "fc":
        return 0, 0, values.reshape(-1)
    finite_mask = np.isfinite(values)
    if finite_mask.all():  # the common case: one vectorized pass, no copy
        return 0, 0, values.reshape(-1)
    nan = int(np.isnan(values).sum())
    return nan, int(values.size - finite_mask.sum()) - nan, values[finite_mask]


def blob_stats(lbn: str, array: np.ndarray, bins: int = 10, written: bool = True,
               regst: int | None = None, preview: bool = True) -> BlobStats:
    on_device = hasattr(array, "copy_to_host")  # a register in GPU memory: read through a host copy, marked
    values = array = array.copy_to_host() if on_device else np.asarray(array)
    nan, inf, finite = finite_stats(values)
    text = np.array2string(values, threshold=20, edgeitems=3, precision=4) if preview else ""
    dtype = short_dtype(values.dtype)
    if finite.size == 0:
        return BlobStats(lbn, values.shape, dtype, None, None, None, None, nan, inf, text, None, 0, written, regst,
                         array, on_device)
    as_float = finite.astype(np.float64)
    hist = None
    if values.dtype.kind == "f" and bins:
        counts, edges = np.histogram(as_float, bins=bins)
        hist = (tuple(float(e) for e in edges), tuple(int(c) for c in counts))
    return BlobStats(lbn, values.shape, dtype, float(as_float.min()), float(as_float.max()), float(as_float.mean()),
                     float(as_float.std()), nan, inf, text, hist, int(finite.size), written, regst, array, on_device)
