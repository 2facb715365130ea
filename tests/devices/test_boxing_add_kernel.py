"""slice_boxing_add (flowlab/runtime/boxing_kernels.py) sums, in input order, the output box's part of every
addend: bit-identical to a left fold in float32 for any number of addends (1: a copy; 2: one fused add; more:
in-place adds after it), whatever box of the inputs the output takes."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from flowlab.runtime.boxing_kernels import boxing_kernel


def add_task(in_slices: list[list[tuple[int, int]]], out_slice: list[tuple[int, int]]) -> SimpleNamespace:
    op = SimpleNamespace(op_type="slice_boxing_add", attrs={"in_slice": in_slices, "out_slice": out_slice})
    return SimpleNamespace(exec_sequence=(op,), name="box-add", task_type="SliceBoxing")


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_add_is_left_fold_of_the_output_box(n: int) -> None:
    rng = np.random.default_rng(n)
    # inputs hold the whole (6, 10) view; the output is rows 2..5 (a P->S piece of a reduce-scatter)
    ins = [rng.standard_normal(60).astype(np.float32) for _ in range(n)]
    out = np.full(40, np.nan, np.float32)
    kernel = boxing_kernel(None, add_task([[(0, 6), (0, 10)]] * n, [(2, 6), (0, 10)]))  # type: ignore[arg-type]
    kernel(ins, [out])
    expected = ins[0].reshape(6, 10)[2:6].copy()
    for x in ins[1:]:
        expected = expected + x.reshape(6, 10)[2:6]
    assert out.tobytes() == expected.reshape(-1).tobytes()


def test_add_reads_each_input_at_its_own_box() -> None:
    # two inputs that each hold a different box of the view: the output's part is found relative to each
    a, b = np.arange(20, dtype=np.float32), np.arange(100, 120, dtype=np.float32)
    out = np.empty(10, np.float32)
    kernel = boxing_kernel(None, add_task([[(0, 4), (0, 5)], [(2, 6), (0, 5)]],  # type: ignore[arg-type]
                                          [(2, 4), (0, 5)]))
    kernel([a, b], [out])
    np.testing.assert_array_equal(out, a[10:20] + b[0:10])
