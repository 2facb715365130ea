"""Ill-typed programs fail when traced, with an error that names the op (issue 9), never later in a kernel.

Each example is a random well-typed program with one ill-typed call appended (a shape, dtype, axis or attribute
the op does not accept). The first job call must raise a flowlab error (or the ValueError/TypeError a user-facing
function raises for a bad argument) that names the op, before any runtime exists; the session stays usable.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as flow
from flowlab.errors import FlowlabError, KernelError

from .generators import programs
from .programs import Node, Program, Value, build_job, input_arrays


def _const(shape: tuple[int, ...], dtype: str) -> tuple[Node, Value]:
    value = 1 if dtype == "int32" else 1.0
    return Node("constant", (), (("value", value), ("dtype", dtype), ("shape", list(shape)))), Value(shape, dtype)


def _bad_call(draw: Any, vals: list[Value]) -> tuple[list[tuple[Node, Value]], Node, tuple[str, ...]]:
    """Nodes to add first (well typed), the ill-typed node, and the names its error may use for the op."""
    x = draw(st.integers(0, len(vals) - 1))
    v = vals[x]
    rank, n = len(v.shape), len(vals)
    other = "int32" if v.dtype != "int32" else "float32"
    kinds = ["add_shapes", "add_dtypes", "reshape", "transpose", "concat_rank", "reduce_axis", "gather_float",
             "slice_empty", "pad_rank", "expand_dims", "bias_add", "matmul", "int_only", "squeeze"]
    kind = draw(st.sampled_from(kinds))
    if kind == "add_shapes" and any(d > 1 for d in v.shape):  # one axis longer by one: neither equal nor 1
        shape = list(v.shape)
        shape[next(i for i, d in enumerate(shape) if d > 1)] += 1
        pre = [_const(tuple(shape), v.dtype)]
        return pre, Node(draw(st.sampled_from(["add", "subtract", "multiply", "divide"])), (x, n)), (
            "broadcast_", "add", "sub", "mul", "div")
    if kind == "add_dtypes":
        return [_const(v.shape, other)], Node("add", (x, n)), ("broadcast_add",)
    if kind == "reshape":
        return [], Node("reshape", (x,), (("shape", [math.prod(v.shape) + 1]),)), ("reshape",)
    if kind == "transpose":
        perm = list(range(rank + 1)) if draw(st.booleans()) or rank < 2 else [0] * rank
        return [], Node("transpose", (x,), (("perm", perm),)), ("transpose",)
    if kind == "concat_rank":
        return [(Node("expand_dims", (x,), (("axis", 0),)), Value((1, *v.shape), v.dtype))], Node(
            "concat", (x, n), (("axis", 0),)), ("concat",)
    if kind == "reduce_axis":
        axis = draw(st.sampled_from([rank, -rank - 1]))
        return [], Node("reduce_sum", (x,), (("axis", axis), ("keepdims", False))), ("reduce_sum",)
    if kind == "gather_float":
        return [_const((1,), "float32")], Node("gather", (x, n), (("axis", 0),)), ("gather",)
    if kind == "slice_empty":
        spec = [(0, 0, 1)] + [(None, None, None)] * (rank - 1)
        return [], Node("slice_v2", (x,), (("slice_tup_list", spec),)), ("slice",)
    if kind == "pad_rank":
        if rank == 4:
            h, w = v.shape[2:]
            return [], Node("reflection_pad2d", (x,), (("padding", [w, w, h, h]),)), ("reflection_pad2d",)
        return [], Node("zero_pad2d", (x,), (("padding", [1, 1, 1, 1]),)), ("zero_pad2d",)
    if kind == "expand_dims":
        return [], Node("expand_dims", (x,), (("axis", rank + 2),)), ("expand_dims",)
    if kind == "squeeze" and any(d > 1 for d in v.shape):
        axis = next(i for i, d in enumerate(v.shape) if d > 1)
        return [], Node("squeeze", (x,), (("axis", [axis]),)), ("squeeze",)
    if kind == "bias_add" and rank >= 2:
        return [_const((v.shape[1] + 1,), v.dtype)], Node("bias_add", (x, n)), ("bias_add",)
    if kind == "matmul" and rank >= 2:
        return [_const((v.shape[-1] + 1, 2), v.dtype)], Node("matmul", (x, n)), ("matmul",)
    if kind == "int_only":  # softmax and reduce_mean need floats
        fn = draw(st.sampled_from(["softmax", "reduce_mean"]))
        pre = [] if v.dtype == "int32" else [(Node("cast", (x,), (("dtype", "int32"),)), Value(v.shape, "int32"))]
        arg = x if v.dtype == "int32" else n
        kw = (("axis", None),) if fn == "softmax" else (("axis", None), ("keepdims", False))
        return pre, Node(fn, (arg,), kw), (fn,)
    return [], Node("reshape", (x,), (("shape", [0]),)), ("reshape",)  # a zero dimension


@st.composite
def ill_typed_programs(draw: Any) -> tuple[Program, tuple[str, ...]]:
    base = draw(programs(max_nodes=4))
    vals = list(base.values)
    pre, bad, names = _bad_call(draw, vals)
    nodes = list(base.nodes) + [node for node, _ in pre] + [bad]
    vals += [value for _, value in pre]
    vals.append(vals[bad.args[0]])  # a stand-in for the value the ill-typed call cannot make
    return Program(base.placeholders, tuple(nodes), tuple(vals), (len(vals) - 1,)), names


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck),
          database=None)
@given(data=st.data())
def test_ill_typed_programs_fail_at_trace_time_naming_the_op(data: st.DataObject) -> None:
    program, names = data.draw(ill_typed_programs(), label="program")
    inputs = data.draw(input_arrays(program), label="inputs")
    flow.clear_default_session()
    job = build_job(program)
    with pytest.raises((FlowlabError, ValueError, TypeError)) as info:
        job(*inputs)
    message = str(info.value)
    assert not isinstance(info.value, KernelError), message
    assert any(name in message for name in names), f"the error does not name the op ({names}): {message}"
    session = flow.default_session()
    assert session.runtime is None, "the error came after the runtime was built, not when tracing"
    if isinstance(info.value, FlowlabError):  # errors from the op registry point at the user's line
        assert "programs.py:" in message, message
    flow.clear_default_session()

