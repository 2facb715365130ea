"""What OneFlow v0.3.4's test_util.py and test_global_storage.py give its op tests, for the ported copies here.

Only the parts the ported files use: argument products, dtype maps, the watch-handler store, and NumPy float64
references (softmax, finite differences) standing in for TensorFlow.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

import flowlab as flow

type_name_to_flow_type = {"float16": flow.float16, "float32": flow.float32, "double": flow.double,
                          "int8": flow.int8, "int32": flow.int32, "int64": flow.int64, "char": flow.char,
                          "uint8": flow.uint8}
type_name_to_np_type = {"float16": np.float16, "float32": np.float32, "double": np.float64, "int8": np.int8,
                        "int32": np.int32, "int64": np.int64, "char": np.int8, "uint8": np.uint8}


def GenArgList(arg_dict: OrderedDict) -> list[list[Any]]:  # noqa: N802 (OneFlow's name)
    return [list(x) for x in itertools.product(*arg_dict.values())]


def GenArgDict(arg_dict: OrderedDict) -> list[dict[str, Any]]:  # noqa: N802
    return [dict(zip(arg_dict.keys(), x)) for x in GenArgList(arg_dict)]


class GlobalStorage:
    """test_global_storage: watch handlers store their blob's value under a key."""

    def __init__(self) -> None:
        self.store: dict[str, np.ndarray] = {}

    def Setter(self, key: str) -> Callable[[Any], None]:  # noqa: N802
        def _set(blob: Any) -> None:
            self.store[key] = np.array(blob.numpy() if hasattr(blob, "numpy") else blob)
        return _set

    def Get(self, key: str) -> np.ndarray:  # noqa: N802
        return self.store[key]


test_global_storage = GlobalStorage()


def softmax64(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def numeric_grad(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of a float64 scalar function (the independent gradient reference)."""
    x = x.astype(np.float64).copy()
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        hi = f(x)
        x[i] = old - eps
        lo = f(x)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g
