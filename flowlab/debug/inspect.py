"""Blob inspection: statistics, a preview and a histogram of a live register's values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlobStats:
    lbn: str
    shape: tuple[int, ...]
    dtype: str
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    nan_count: int
    inf_count: int
    preview: str
    histogram: tuple[tuple[float, ...], tuple[int, ...]] | None  # (bin edges, counts) for floats

    def __str__(self) -> str:
        head = f"{self.lbn} : {self.dtype}{list(self.shape)}"
        if self.min is None:
            return f"{head} (empty)"
        stats = (f"min {self.min:.6g} max {self.max:.6g} mean {self.mean:.6g} std {self.std:.6g} "
                 f"nan {self.nan_count} inf {self.inf_count}")
        return f"{head}\n  {stats}\n  {self.preview}"


def blob_stats(lbn: str, array: np.ndarray, bins: int = 10) -> BlobStats:
    values = np.asarray(array)
    floating = np.issubdtype(values.dtype, np.floating)
    finite = values[np.isfinite(values)] if floating else values
    nan = int(np.isnan(values).sum()) if floating else 0
    inf = int(np.isinf(values).sum()) if floating else 0
    preview = np.array2string(values, threshold=20, edgeitems=3, precision=4)
    if finite.size == 0:
        return BlobStats(lbn, values.shape, str(values.dtype), None, None, None, None, nan, inf, preview, None)
    hist = None
    if floating:
        counts, edges = np.histogram(finite.astype(np.float64), bins=bins)
        hist = (tuple(float(e) for e in edges), tuple(int(c) for c in counts))
    as_float = finite.astype(np.float64)
    return BlobStats(lbn, values.shape, str(values.dtype), float(as_float.min()), float(as_float.max()),
                     float(as_float.mean()), float(as_float.std()), nan, inf, preview, hist)
