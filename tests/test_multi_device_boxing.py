"""Boxing identity tests (OneFlow's test_boxing_v2): a blob laid out one way on one placement, read another
way on another placement, arrives equal to NumPy's value. S->S (same and different axes), S->B, B->S, B->B,
P->B and P->S, on 1 to 3 CPU devices, each with the builder OneFlow's order picks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

from .multi_device import place

SHAPE = (6, 7)  # 7 rows over 2 or 3 devices are uneven: the balanced splitter's extra row goes first
X = np.arange(42, dtype=np.float32).reshape(SHAPE) * 0.5 - 3


def devices(n: int, last: bool = False) -> str:
    """n devices of the 3: the first ones, or the last ones (another placement with the same count)."""
    lo = 3 - n if last else 0
    return f"0:{lo}-{lo + n - 1}" if n > 1 else f"0:{lo}"


def run_identity(monkeypatch, n: int, src: str, m: int, dst: str, last: bool) -> tuple[np.ndarray, object]:
    flow.config.cpu_device_num(3)
    place(monkeypatch, {
        "Input_0": (devices(n), {"out": src}),
        "src": (devices(n), {"in_0": src, "out_0": src}),
        "dst": (devices(m, last), {"in_0": dst, "out_0": dst}),
        "Return_0": (devices(m, last), {"in_0": dst, "out": dst}),
    })

    @flow.global_function()
    def boxing_job(x: tp.Numpy.Placeholder(SHAPE)) -> tp.Numpy:
        return flow.identity(flow.identity(x, name="src"), name="dst")

    return boxing_job(X), flow.default_session()


SBPS = ["S(0)", "S(1)", "B"]


@pytest.mark.parametrize(("n", "m", "src", "dst"), [
    (n, m, s, d) for n, m in itertools.product((1, 2, 3), (1, 2, 3)) for s, d in itertools.product(SBPS, SBPS)
    if not (s == "B" and d == "B" and n > 1 and m > 1 and (n + m) % 2)  # keep the matrix small: B->B twice
])
def test_split_and_broadcast_boxing_gives_the_same_blob(monkeypatch, n, m, src, dst):
    y, session = run_identity(monkeypatch, n, src, m, dst, last=(n + m) % 2 == 1)
    np.testing.assert_array_equal(y, X)
    rows = [r for r in session.compiled.boxing_log.get(0, ()) if r.startswith("src,dst,")]
    if n == m == 1:
        assert not rows  # one device to one device is no boxing: nothing logged
        return
    s, d = ("S(0)" if n == 1 else src), ("S(0)" if m == 1 else dst)  # one device holds the whole blob: S(0)
    if n == m and s == d:
        expected = "OneToOneSubTskGphBuilder"
    elif m == 1 and (s == "B" or n == 1):
        expected = "B21SubTskGphBuilder"
    elif s == d == "B":
        expected = "NaiveB2BSubTskGphBuilder"
    else:
        expected = "SliceBoxingSubTskGphBuilder"
    assert rows[0].split(",")[-2] == expected, rows[0]


@pytest.mark.parametrize(("n", "axis", "m", "dst"), [
    (2, 0, 2, "B"), (3, 1, 2, "B"), (2, 1, 3, "B"), (3, 0, 1, "B"),
    (2, 0, 2, "S(1)"), (3, 1, 3, "S(0)"), (2, 1, 1, "S(0)"), (3, 0, 2, "S(1)"),
])
def test_partial_sum_boxing_adds_the_addends(monkeypatch, n, axis, m, dst):
    """reduce_sum over the split axis leaves each device a partial sum (P); boxing to B or S adds them."""
    flow.config.cpu_device_num(3)
    out = "S(0)" if dst == "B" and m == 1 else dst
    place(monkeypatch, {
        "Input_0": (devices(n), {"out": f"S({axis})"}),
        "part": (devices(n), {"input_tensor_0": f"S({axis})", "output_tensor_0": "P"}),
        "dst": (devices(m, last=True), {"in_0": dst, "out_0": dst}),
        "Return_0": (devices(m, last=True), {"in_0": out, "out": out}),
    })

    @flow.global_function()
    def partial_job(x: tp.Numpy.Placeholder((6, 7))) -> tp.Numpy:
        return flow.identity(flow.math.reduce_sum(x, axis=axis, keepdims=True, name="part"), name="dst")

    np.testing.assert_allclose(partial_job(X), X.sum(axis=axis, keepdims=True), rtol=1e-6)
    plan = flow.default_session().plan
    adds = [t for t in plan.tasks_of_job("partial_job") if t.op_types == ("slice_boxing_add",)]
    copies = [t for t in plan.tasks_of_job("partial_job") if t.op_types == ("slice_boxing_copy",)]
    blob = 7 if axis == 0 else 6
    if dst == "B" and m > 1 and blob >= m:  # reduce-scatter the flattened blob, then all-gather it
        assert (len(adds), len(copies)) == (m, m)
        assert all(len(t.consumed_regst_desc_id) == n for t in adds)
    else:  # one add per destination device
        assert (len(adds), len(copies)) == (m, 0)
    assert all(t.is_boxing and t.name.startswith("System-Boxing-BoxingAdd-") for t in adds)


def test_partial_sum_smaller_than_the_device_count_is_added_whole(monkeypatch):
    flow.config.cpu_device_num(3)
    place(monkeypatch, {
        "Input_0": ("0:0-2", {"out": "S(0)"}),
        "part": ("0:0-2", {"input_tensor_0": "S(0)", "output_tensor_0": "P"}),
        "dst": ("0:0-2", {"in_0": "B", "out_0": "B"}),
        "Return_0": ("0:0-2", {"in_0": "B", "out": "B"}),
    })

    @flow.global_function()
    def small_job(x: tp.Numpy.Placeholder((3, 2))) -> tp.Numpy:
        return flow.identity(flow.math.reduce_sum(x, axis=0, keepdims=True, name="part"), name="dst")

    x = np.array([[1, 2], [30, 40], [500, 600]], np.float32)
    np.testing.assert_array_equal(small_job(x), [[531, 642]])
    log = flow.default_session().compiled.boxing_log[0]
    assert any(r.startswith("part,dst,") and r.endswith("SliceBoxingSubTskGphBuilder,BuildSubTaskGphP2B")
               for r in log)


def test_broadcast_into_partial_sum_gives_one_device_the_blob_and_zeros_to_the_others(monkeypatch):
    flow.config.cpu_device_num(2)
    place(monkeypatch, {
        "Input_0": ("0:0-1", {"out": "B"}),
        "src": ("0:0-1", {"in_0": "B", "out_0": "B"}),
        "dst": ("0:0-1", {"in_0": "P", "out_0": "P"}),
        "Return_0": ("0:0-1", {"in_0": "B", "out": "B"}),
    })

    @flow.global_function()
    def b2p_job(x: tp.Numpy.Placeholder(SHAPE)) -> tp.Numpy:
        return flow.identity(flow.identity(x, name="src"), name="dst")

    np.testing.assert_array_equal(b2p_job(X), X)
    plan = flow.default_session().plan
    zeros = [t for t in plan.tasks_of_job("b2p_job") if t.task_type == "BoxingZeros"]
    assert len(zeros) == 1 and zeros[0].name.startswith("System-Boxing-Zeros-")
