"""Pairs of acts a fused segment runs as one pass (kernels/numba_cpu/pairs.py): each pair kernel writes the bytes
the two kernels write one after the other, special values included; a pair is refused where one pass could not
(overlapping arrays, a cast between the copies, a checked act); and a model's replayed and fused calls that use all
three pairs are the protocol's bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.kernels.numba_cpu import pairs
from flowlab.kernels.numba_cpu.array import copy_flat
from flowlab.kernels.numba_cpu.math import _relu, _relu_grad
from flowlab.kernels.numba_cpu.nn import _bias_add_rows
from flowlab.kernels.numba_cpu.reduce import _sum_leading
from flowlab.kernels.registry import External, FusedCall
from flowlab.replay.fused import Segment
from tests.helpers.fused_pairs import bits, data
from tests.helpers.replay_proof import CALLS, assert_replayed_and_fused, assert_same, run
from tests.helpers.wide_mlp import build_wide_mlp


def test_copy_twice_is_two_copies() -> None:
    x = data((7, 9), 0)
    y1, z1, y2, z2 = (np.full_like(x, 5.0) for _ in range(4))
    copy_flat(x, y1), copy_flat(y1, z1)
    call = pairs.pair_call(FusedCall(copy_flat, (x, y2)), FusedCall(copy_flat, (y2, z2)))
    assert call is not None and call.fn is pairs._copy_twice
    call.fn(*call.args)
    assert bits(y1, z1) == bits(y2, z2)


@pytest.mark.parametrize("in_place", [False, True])
def test_bias_add_relu_is_the_two_kernels(in_place: bool) -> None:
    a, b = data((6, 11), 1), data((11,), 2)
    t1, t2 = np.empty_like(a), np.empty_like(a)
    y1, a2 = np.empty_like(a), a.copy()
    _bias_add_rows(a, b, t1), _relu(t1, y1)
    y2 = a2 if in_place else np.empty_like(a)  # in place: the relu written over a (dense's h, as a block reuses)
    call = pairs.pair_call(FusedCall(_bias_add_rows, (a2, b, t2)), FusedCall(_relu, (t2, y2)))
    assert call is not None
    assert call.fn is (pairs._bias_add_relu_rows_in_place if in_place else pairs._bias_add_relu_rows)
    call.fn(*call.args)
    assert bits(t1, y1) == bits(t2, y2)
    if not in_place:
        assert bits(a2) == bits(a)


def test_relu_grad_sum_is_the_two_kernels_with_the_sum_over_the_first_row() -> None:
    """A memory block may put the bias gradient on the first row of the relu output it is computed from."""
    block = np.empty(2 * 5 * 13, np.float32)
    y, dy = block[:65].reshape(5, 13), block[65:].reshape(5, 13)
    y[:], dy[:] = data((5, 13), 3), data((5, 13), 4)
    y_before = y.copy()
    dx1, dx2, out1 = np.empty_like(y), np.empty_like(y), np.empty(13, np.float32)
    _relu_grad(y, dy, dx1), _sum_leading(dx1, out1, np.empty(13))  # the sum's float64 accumulator
    out2 = block[:13]  # y's first row
    call = pairs.pair_call(FusedCall(_relu_grad, (y, dy, dx2)), FusedCall(_sum_leading, (dx2, out2, np.empty(13))))
    assert call is not None and call.fn is pairs._relu_grad_sum_rows
    call.fn(*call.args)
    assert bits(dx1, out1) == bits(dx2, out2)
    assert bits(y[1:]) == bits(y_before[1:])


def test_one_pass_over_overlapping_arrays_is_refused() -> None:
    """The guard matters: a copy of a copy whose last output overlaps the source one element on gives other
    bytes in one pass (it reads what it just wrote), so no pair is made."""
    block = data((20,), 5)
    x, y, z = block[0:10], np.empty(10, np.float32), block[1:11]
    sequential = block.copy()
    copy_flat(sequential[0:10], y), copy_flat(y, sequential[1:11])
    one_pass = block.copy()
    pairs._copy_twice(one_pass[0:10], np.empty(10, np.float32), one_pass[1:11])
    assert bits(one_pass) != bits(sequential)
    assert pairs.pair_call(FusedCall(copy_flat, (x, y)), FusedCall(copy_flat, (y, z))) is None

    a, b, t = data((4, 8), 6), data((8,), 7), np.empty((4, 8), np.float32)
    shifted = np.empty(40, np.float32)
    assert pairs.pair_call(FusedCall(_bias_add_rows, (shifted[:32].reshape(4, 8), b, t)),
                           FusedCall(_relu, (t, shifted[1:33].reshape(4, 8)))) is None  # y on a, one off
    assert pairs.pair_call(FusedCall(_bias_add_rows, (a, b, t)), FusedCall(_relu, (t, t))) is None  # y over t
    y, dy, dx = data((4, 8), 8), data((4, 8), 9), np.empty((4, 8), np.float32)
    acc = np.empty(8)
    assert pairs.pair_call(FusedCall(_relu_grad, (y, dy, dx)), FusedCall(_sum_leading, (dx, dx[1], acc))) is None
    assert pairs.pair_call(FusedCall(_relu_grad, (y, dy, dx)),
                           FusedCall(_sum_leading, (dx, y.reshape(-1)[1:9], acc))) is None  # on y's row, one off


def test_no_pair_across_a_cast_a_checked_act_or_other_arrays() -> None:
    x = data((3, 4), 10)
    y64, z = np.empty((3, 4), np.float64), np.empty((3, 4), np.float32)
    assert pairs.pair_call(FusedCall(copy_flat, (x, y64)), FusedCall(copy_flat, (y64, z))) is None  # a cast
    y = np.empty_like(x)
    assert pairs.pair_call(FusedCall(copy_flat, (x, y)), FusedCall(copy_flat, (y, z), True)) is None
    assert pairs.pair_call(FusedCall(copy_flat, (x, y)), FusedCall(copy_flat, (y.copy(), z))) is None
    pushed = External(lambda: x, x)  # the caller's array: read once, written to both registers
    call = pairs.pair_call(FusedCall(copy_flat, (pushed, y)), FusedCall(copy_flat, (y, z)))
    assert call is not None and call.args == (pushed, y, z)
    # ... but no other pair reads one: no pair (an exception here would leave the whole schedule unfused)
    b, t = data((4,), 11), np.empty((3, 4), np.float32)
    assert pairs.pair_call(FusedCall(_bias_add_rows, (pushed, b, t)), FusedCall(_relu, (t, z))) is None
    assert pairs.pair_call(FusedCall(_relu_grad, (pushed, x, y)), FusedCall(_sum_leading, (y, b, np.empty(4)))) is None


def test_the_pairs_fused_are_the_protocol_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    protocol = run(build_wide_mlp, False, CALLS, monkeypatch)
    replayed = run(build_wide_mlp, True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    sources = "".join(step.source_path.read_text() for schedule in replayed["layer"].schedules.values()
                      for step in schedule.fused or () if isinstance(step, Segment))
    for kernel in ("_copy_twice", "_bias_add_relu_rows_in_place", "_relu_grad_sum_rows"):
        assert f"pairs import {kernel} " in sources, f"the model no longer runs {kernel}"
    assert_same(protocol, replayed)
