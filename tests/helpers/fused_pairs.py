"""Data and bit views for the fused update pairs' proofs."""

from __future__ import annotations

import numpy as np

SPECIAL = np.array([0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 3e38], np.float32)


def data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    n = min(a.size, SPECIAL.size)
    a.reshape(-1)[:n] = SPECIAL[:n]
    return a


def bits(*arrays: np.ndarray) -> list[bytes]:
    return [a.tobytes() for a in arrays]
