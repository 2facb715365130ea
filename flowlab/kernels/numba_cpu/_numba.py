"""The one place flowlab imports Numba: the cache directory is versioned before the import.

A cache directory named with flowlab's version keeps a stale kernel from a changed callee in another file from
being reused across releases (a Numba caching pitfall, see shared/reference/numba-performance.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from ... import __version__


def cache_dir() -> Path:
    base = os.environ.get("FLOWLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "flowlab"
    )
    return Path(base) / f"numba-{__version__}"


os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir()))

import numba  # noqa: E402

if numba.config.CACHE_DIR != os.environ["NUMBA_CACHE_DIR"]:  # numba was imported before flowlab
    numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]


def njit(fn=None, **kwargs):  # noqa: ANN001, ANN201
    """``numba.njit(cache=True)``; every flowlab kernel goes through here."""
    kwargs.setdefault("cache", True)
    if fn is None:
        return lambda f: numba.njit(**kwargs)(f)
    return numba.njit(**kwargs)(fn)
