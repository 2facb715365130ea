"""Numba forms of the slice-boxing kernels (runtime/boxing_kernels.py), for fused replays only.

A data-parallel step's boxing (the reduce-scatter adds and all-gather copies of every P weight gradient, the
push's scatter of the batch) was a NumPy kernel per act: a Python step between fused segments on a lane
(replay/lanes.py), each splitting the lane's segment in two and costing its Python (reshape, slicing, a ufunc
call) even for a 10-element bias gradient. In Numba they join the lane's segments and run without the GIL.

Only acts whose every part is one contiguous run of both arrays are fused (S(0) pieces, the flattened P->B
blob, whole blobs: every boxing of a data-parallel job); others keep their NumPy kernel. The sums are the
NumPy kernel's left fold, ``(a + b) + c``, element by element in the same dtype, so the results are its bits.
One function per number of parts (a boxing act has one part per device): up to ``MAX_PARTS``.
"""

from __future__ import annotations

from ._numba import njit

MAX_PARTS = 4


@njit
def box_copy1(s0, d0):
    for i in range(d0.size):
        d0[i] = s0[i]


@njit
def box_copy2(s0, d0, s1, d1):
    for i in range(d0.size):
        d0[i] = s0[i]
    for i in range(d1.size):
        d1[i] = s1[i]


@njit
def box_copy3(s0, d0, s1, d1, s2, d2):
    for i in range(d0.size):
        d0[i] = s0[i]
    for i in range(d1.size):
        d1[i] = s1[i]
    for i in range(d2.size):
        d2[i] = s2[i]


@njit
def box_copy4(s0, d0, s1, d1, s2, d2, s3, d3):
    for i in range(d0.size):
        d0[i] = s0[i]
    for i in range(d1.size):
        d1[i] = s1[i]
    for i in range(d2.size):
        d2[i] = s2[i]
    for i in range(d3.size):
        d3[i] = s3[i]


@njit
def box_add2(a, b, out):
    for i in range(out.size):
        out[i] = a[i] + b[i]


@njit
def box_add3(a, b, c, out):
    for i in range(out.size):
        out[i] = (a[i] + b[i]) + c[i]


@njit
def box_add4(a, b, c, d, out):
    for i in range(out.size):
        out[i] = ((a[i] + b[i]) + c[i]) + d[i]


COPIES = {1: box_copy1, 2: box_copy2, 3: box_copy3, 4: box_copy4}
ADDS = {1: box_copy1, 2: box_add2, 3: box_add3, 4: box_add4}  # one addend: a copy, as the NumPy kernel does
