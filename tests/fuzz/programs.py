"""Random OneFlow programs for the differential fuzz tests: their data, how they become job functions, and the
Hypothesis strategies of their input values (the programs themselves come from generators.py).

A ``Program`` is plain data: placeholders (shape, dtype), then ``Node``s, each one call of a user-facing op
function (``flow.math.add``, ``flow.reduce_sum``, ...) on earlier values, then the values it returns. It prints as
the Python it stands for, so a failing example reads as a program. Every node's output shape and dtype are
computed here from the op's documented rule, so the tests also check flowlab's shape inference.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Tuple

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowlab as flow
import flowlab.typing as tp

FLOATS = ("float32", "float64")
DTYPES = {"float32": flow.float32, "float64": flow.float64, "int32": flow.int32}


@dataclass(frozen=True)
class Value:
    shape: tuple[int, ...]
    dtype: str
    index_bound: int | None = None  # an int32 value known to lie in [0, index_bound): usable as gather indices


@dataclass(frozen=True)
class Node:
    fn: str  # a key of CALLS
    args: tuple[int, ...]  # indices of earlier values
    kw: tuple[tuple[str, Any], ...] = ()

    def source(self, names: list[str]) -> str:
        args = [names[i] for i in self.args] + [f"{k}={v!r}" for k, v in self.kw]
        return f"{self.fn}({', '.join(args)})"


@dataclass(frozen=True)
class Program:
    placeholders: tuple[Value, ...]
    nodes: tuple[Node, ...]
    values: tuple[Value, ...]  # placeholders, then one per node
    returns: tuple[int, ...]

    def __repr__(self) -> str:
        names = [f"x{i}" for i in range(len(self.placeholders))] + [f"v{i}" for i in range(len(self.nodes))]
        params = ", ".join(f"{n}: {v.dtype}{list(v.shape)}" for n, v in zip(names, self.placeholders))
        lines = [f"def fuzz_job({params}):"]
        for k, node in enumerate(self.nodes):
            out = self.values[len(self.placeholders) + k]
            lines.append(f"    v{k} = {node.source(names)}  # {out.dtype}{list(out.shape)}")
        lines.append(f"    return {', '.join(names[i] for i in self.returns)}")
        return "\n".join(lines)


def _scalar_op(name: str) -> Callable[..., Any]:
    def call(x: Any, value: float, left: bool = False) -> Any:
        fn = getattr(flow.math, name)
        return fn(value, x) if left else fn(x, value)

    return call


# How each node kind calls flowlab (the program's own source names the same calls).
CALLS: dict[str, Callable[..., Any]] = {
    **{name: getattr(flow.math, name) for name in ("add", "subtract", "multiply", "divide")},
    **{f"{name}_scalar": _scalar_op(name) for name in ("add", "subtract", "multiply", "divide")},
    **{name: getattr(flow.math, name) for name in (
        "relu", "sigmoid", "tanh", "negative", "reciprocal", "exp", "log", "sqrt", "square", "sign", "abs")},
    "leaky_relu": flow.nn.leaky_relu, "gelu": flow.nn.gelu,
    "sigmoid_cross_entropy_with_logits": flow.nn.sigmoid_cross_entropy_with_logits,
    "softmax_cross_entropy_with_logits": flow.nn.softmax_cross_entropy_with_logits, "softmax": flow.nn.softmax,
    "reduce_sum": flow.math.reduce_sum, "reduce_mean": flow.math.reduce_mean, "reduce_max": flow.math.reduce_max,
    "argmax": flow.math.argmax, "matmul": flow.matmul, "bias_add": flow.nn.bias_add,
    "reshape": flow.reshape, "flatten": flow.flatten, "expand_dims": flow.expand_dims, "squeeze": flow.squeeze,
    "transpose": flow.transpose, "concat": lambda *xs, axis: flow.concat(list(xs), axis=axis),
    "slice_v2": flow.slice_v2, "cast": lambda x, dtype: flow.cast(x, DTYPES[dtype]), "gather": flow.gather,
    "identity": flow.identity, "zeros_like": flow.zeros_like, "ones_like": flow.ones_like,
    "constant": lambda value, dtype, shape: flow.constant(value, DTYPES[dtype], shape),
    "zero_pad2d": flow.zero_pad2d, "reflection_pad2d": flow.reflection_pad2d,
}


def build_job(program: Program, name: str = "fuzz_job") -> Callable[..., Any]:
    """Register ``program`` as a global function in the default session; returns the job function."""
    def body(*blobs: Any) -> Any:
        values = list(blobs)
        for node in program.nodes:
            values.append(CALLS[node.fn](*(values[i] for i in node.args), **dict(node.kw)))
        outs = [values[i] for i in program.returns]
        return outs[0] if len(outs) == 1 else tuple(outs)

    params = [inspect.Parameter(f"x{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation=tp.Numpy.Placeholder(v.shape, dtype=DTYPES[v.dtype]))
              for i, v in enumerate(program.placeholders)]
    returns = tp.Numpy if len(program.returns) == 1 else Tuple[tuple(tp.Numpy for _ in program.returns)]
    body.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
    body.__name__ = body.__qualname__ = name
    return flow.global_function()(body)


# -- input values --------------------------------------------------------------------------------------------------
FLOAT_SPECIALS = [float("nan"), float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 1e30, -1e30,
                  3e38, -3e38, 1e-38, 1e-45, -1e-45, 1e-30]  # huge, tiny and denormal (1e-45) included
# int32 values: small ones, and the extremes but INT_MIN (INT_MIN / -1 and -INT_MIN overflow in C; wrap-around
# arithmetic still reaches INT_MIN from these, and the oracle wraps as two's complement does).
INT_VALUES = st.one_of(st.integers(-50, 50), st.sampled_from([0, 1, -1, 2**31 - 1, -(2**31 - 1)]))


def elements(dtype: str, finite: bool = False) -> st.SearchStrategy[Any]:
    if dtype == "int32":
        return INT_VALUES
    width = 32 if dtype == "float32" else 64
    moderate = st.floats(-10, 10, width=width)
    if finite:
        return moderate
    specials = [v for v in FLOAT_SPECIALS if dtype == "float64" or abs(v) <= 3.4e38 or v != v]
    return st.one_of(moderate, st.sampled_from(specials), st.floats(width=width))


def input_arrays(program: Program, finite: bool = False) -> st.SearchStrategy[list[np.ndarray]]:
    # fill=nothing: every element drawn on its own (Hypothesis otherwise fills most of an array with one value)
    return st.tuples(*(hnp.arrays(np.dtype(v.dtype), v.shape, elements=elements(v.dtype, finite),
                                  fill=st.nothing()) for v in program.placeholders)).map(list)
