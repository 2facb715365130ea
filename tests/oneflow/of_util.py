"""What OneFlow v0.3.4's test_util.py and test_global_storage.py give its op tests, for the ported copies here.

Only the parts the ported files use: argument products, dtype maps, the watch-handler store, and NumPy float64
references (softmax, finite differences) standing in for TensorFlow.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import pytest

import flowlab as flow

type_name_to_flow_type = {"float16": flow.float16, "float32": flow.float32, "double": flow.double,
                          "int8": flow.int8, "int32": flow.int32, "int64": flow.int64, "char": flow.char,
                          "uint8": flow.uint8}
type_name_to_np_type = {"float16": np.float16, "float32": np.float32, "double": np.float64, "int8": np.int8,
                        "int32": np.int32, "int64": np.int64, "char": np.int8, "uint8": np.uint8}


def GenArgList(arg_dict: OrderedDict) -> list[list[Any]]:
    return [list(x) for x in itertools.product(*arg_dict.values())]


def GenArgDict(arg_dict: OrderedDict) -> list[dict[str, Any]]:
    return [dict(zip(arg_dict.keys(), x)) for x in GenArgList(arg_dict)]


class GlobalStorage:
    """test_global_storage: watch handlers store their blob's value under a key."""

    def __init__(self) -> None:
        self.store: dict[str, np.ndarray] = {}

    def Setter(self, key: str) -> Callable[[Any], None]:
        def _set(blob: Any) -> None:
            self.store[key] = np.array(blob.numpy() if hasattr(blob, "numpy") else blob)
        return _set

    def Get(self, key: str) -> np.ndarray:
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


def RunOneflowOp(device_type: str, flow_op: Callable, x: np.ndarray, flow_args: list) -> tuple:
    """test_util.RunOneflowOp: the op on a fed input plus a zero variable, trained with lr 0; output and x's diff."""
    import flowlab.typing as oft

    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def FlowJob(x: oft.Numpy.Placeholder(x.shape)):
        with flow.scope.placement(device_type, "0:0"):
            x += flow.get_variable(name="v1", shape=(1,), dtype=flow.float, initializer=flow.zeros_initializer())
            loss = flow_op(x, *flow_args)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0]), momentum=0).minimize(loss)
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    y = FlowJob(x).get().numpy()
    return y, test_global_storage.Get("x_diff")


def CompareOpWithNumpy(device_type: str, flow_op: Callable, np_op: Callable, input_shape: tuple,
                       op_args: list | None = None, input_minval: float = -10, input_maxval: float = 10,
                       y_rtol: float = 1e-5, y_atol: float = 1e-5, x_diff_rtol: float = 1e-5,
                       x_diff_atol: float = 1e-5) -> None:
    """test_util.CompareOpWithTensorFlow with the TensorFlow side replaced by ``np_op(x64) -> (y, dy/dx)`` (the
    elementwise derivative, as the loss's diff is ones)."""
    x = np.random.uniform(low=input_minval, high=input_maxval, size=input_shape).astype(np.float32)
    of_y, of_x_diff = RunOneflowOp(device_type, flow_op, x, op_args or [])
    ref_y, ref_dx = np_op(x.astype(np.float64))
    assert np.allclose(of_y, ref_y, rtol=y_rtol, atol=y_atol)
    assert np.allclose(of_x_diff, ref_dx, rtol=x_diff_rtol, atol=x_diff_atol)


class TestCase:
    """The unittest.TestCase methods OneFlow's test bodies call on ``test_case``, as plain asserts."""

    def assertTrue(self, cond: Any, msg: Any = None) -> None:
        assert cond, msg

    def assertFalse(self, cond: Any, msg: Any = None) -> None:
        assert not cond, msg

    def assertEqual(self, a: Any, b: Any, msg: Any = None) -> None:
        assert a == b, msg

    def assertGreater(self, a: Any, b: Any, msg: Any = None) -> None:
        assert a > b, msg

    def assertRaises(self, error: type[BaseException], fn: Callable[..., Any], *args: Any) -> None:
        with pytest.raises(error):
            fn(*args)


class Args:
    """test_util.Args: the op's extra arguments (the TensorFlow ones are not used here)."""

    def __init__(self, flow_args: list, tf_args: Any = None) -> None:
        self.flow_args = flow_args
        self.tf_args = flow_args if tf_args is None else tf_args
