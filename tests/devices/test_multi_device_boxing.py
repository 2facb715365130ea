"""Boxing identity tests (OneFlow's test_boxing_v2): a blob laid out one way on one placement, read another
way on another placement, arrives equal to NumPy's value. S->S (same and different axes), S->B, B->S, B->B,
P->B and P->S, on 1 to 3 CPU devices, each with the builder OneFlow's order picks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import CompileError

SHAPE = (6, 7)  # 7 rows over 2 or 3 devices are uneven: the balanced splitter's extra row goes first
X = np.arange(42, dtype=np.float32).reshape(SHAPE) * 0.5 - 3


def devices(n: int, last: bool = False) -> str:
    """n devices of the 3: the first ones, or the last ones (another placement with the same count)."""
    lo = 3 - n if last else 0
    return f"0:{lo}-{lo + n - 1}" if n > 1 else f"0:{lo}"


def distribute(sbp: str):
    return flow.distribute.broadcast() if sbp == "B" else flow.distribute.split(int(sbp[2]))


def run_identity(n: int, src: str, m: int, dst: str, last: bool) -> tuple[np.ndarray, object]:
    """OneFlow's test_boxing_v2: identity under one placement and SBP, then under another."""
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def boxing_job(x: tp.Numpy.Placeholder(SHAPE)) -> tp.Numpy:
        with flow.scope.placement("cpu", devices(n)):
            a = flow.identity(x.with_distribute(distribute(src)), name="src")
        with flow.scope.placement("cpu", devices(m, last)):
            return flow.identity(a.with_distribute(distribute(dst)), name="dst")

    return boxing_job(X), flow.default_session()


SBPS = ["S(0)", "S(1)", "B"]


@pytest.mark.parametrize(("n", "m", "src", "dst"), [
    (n, m, s, d) for n, m in itertools.product((1, 2, 3), (1, 2, 3)) for s, d in itertools.product(SBPS, SBPS)
    if not (s == "B" and d == "B" and n > 1 and m > 1 and (n + m) % 2)  # keep the matrix small: B->B twice
])
def test_split_and_broadcast_boxing_gives_the_same_blob(n, m, src, dst):
    y, session = run_identity(n, src, m, dst, last=(n + m) % 2 == 1)
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
def test_partial_sum_boxing_adds_the_addends(n, axis, m, dst):
    """reduce_sum over the split axis leaves each device a partial sum (P); boxing to B or S adds them."""
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def partial_job(x: tp.Numpy.Placeholder((6, 7))) -> tp.Numpy:
        with flow.scope.placement("cpu", devices(n)):
            part = flow.math.reduce_sum(x.with_distribute(flow.distribute.split(axis)), axis=axis, keepdims=True,
                                        name="part")
        with flow.scope.placement("cpu", devices(m, last=True)):
            return flow.identity(part.with_distribute(distribute(dst)), name="dst")

    np.testing.assert_allclose(partial_job(X), X.sum(axis=axis, keepdims=True), rtol=1e-6)
    plan = flow.default_session().plan
    boxing = [t for t in plan.tasks_of_job("partial_job")
              if t.is_boxing and t.exec_sequence[0].attrs["lbi"] == "part/output_tensor_0"]
    adds = [t for t in boxing if t.op_types == ("slice_boxing_add",)]
    copies = [t for t in boxing if t.op_types == ("slice_boxing_copy",)]
    blob = 7 if axis == 0 else 6
    if dst == "B" and m > 1 and blob >= m:  # reduce-scatter the flattened blob, then all-gather it
        assert (len(adds), len(copies)) == (m, m)
        assert all(len(t.consumed_regst_desc_id) == n for t in adds)
    else:  # one add per destination device
        assert (len(adds), len(copies)) == (m, 0)
    assert all(t.is_boxing and t.name.startswith("System-Boxing-BoxingAdd-") for t in adds)


def test_partial_sum_smaller_than_the_device_count_is_added_whole():
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def small_job(x: tp.Numpy.Placeholder((3, 2))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-2"):
            part = flow.math.reduce_sum(x.with_distribute(flow.distribute.split(0)), axis=0, keepdims=True,
                                        name="part")
            return flow.identity(part.with_distribute(flow.distribute.broadcast()), name="dst")

    x = np.array([[1, 2], [30, 40], [500, 600]], np.float32)
    np.testing.assert_array_equal(small_job(x), [[531, 642]])
    log = flow.default_session().compiled.boxing_log[0]
    assert any(r.startswith("part,dst,") and r.endswith("SliceBoxingSubTskGphBuilder,BuildSubTaskGphP2B")
               for r in log)


def test_debug_mode_writes_oneflows_boxing_log(tmp_path, monkeypatch):
    """FLOWLAB_DEBUG_MODE=1: ``log/<host>/boxing/log/<job_id>.csv`` per job, OneFlow's BoxingLogger columns."""
    import socket

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOWLAB_DEBUG_MODE", "1")
    run_identity(2, "S(0)", 2, "B", last=False)
    log = tmp_path / "log" / socket.gethostname() / "boxing" / "log" / "0.csv"
    lines = log.read_text().splitlines()
    assert lines[0] == ("src_op_name,dst_op_name,src_parallel_conf,dst_parallel_conf,src_sbp_conf,dst_sbp_conf,"
                        "lbi,dtype,shape,builder,comment")
    assert 'src,dst,0:CPU:0-1,0:CPU:0-1,S(0),B,src/out_0,float32,"(6,7)",SliceBoxingSubTskGphBuilder,' \
           "BuildSubTaskGphS2B" in lines
    push = tmp_path / "log" / socket.gethostname() / "boxing" / "log" / "1.csv"  # the push job scatters the batch
    assert push.read_text().splitlines()[1].endswith("ToInterfaceSubTskGphBuilder,BuildSubTaskGphB2S")


class _Node:
    def __init__(self, machine_id: int, device_id: int, name: str) -> None:
        self.machine_id, self.device_id, self.name = machine_id, device_id, name

    def __repr__(self) -> str:
        return self.name


class _Graph:
    """A stand-in TaskGraph recording what the boxing builders ask for."""

    def __init__(self) -> None:
        self.made: list[tuple] = []

    def proxy(self, node, machine_id):
        if node.machine_id == machine_id:
            return node
        copy = _Node(machine_id, -1, f"comm({node.name})")
        self.made.append(("comm", copy.name))
        return copy

    def boxing_node(self, kind, edge, machine_id, device_id, inputs, out_box, view_shape, out_desc):
        node = _Node(machine_id, device_id, f"{kind}@{machine_id}:{device_id}")
        self.made.append((kind, node.name, [n.name for n, _ in inputs], str(out_box), out_desc.shape))
        return node


def _edge(src_sbp, dst_sbp, src_devices, dst_devices, interface=False):
    from flowlab.compiler.boxing import Edge
    from flowlab.ir import BlobDesc, OpConf, ParallelConf, parse_sbp
    from flowlab.ir.dtype import float32

    def tasks(devices, tag):
        return tuple(_Node(m, d, f"{tag}{i}") for i, (m, d) in enumerate(devices))

    def names(devices):
        return tuple(f"{m}:{d}" for m, d in devices)

    return Edge(0, OpConf("a", "identity", parallel_conf=ParallelConf("cpu", names(src_devices))),
                OpConf("b", "identity", parallel_conf=ParallelConf("cpu", names(dst_devices))), "a/out_0",
                BlobDesc((4, 2), float32), tasks(src_devices, "s"), tasks(dst_devices, "d"), parse_sbp(src_sbp),
                parse_sbp(dst_sbp), interface)


def test_broadcast_to_partial_sum_gives_the_nearest_destination_the_blob_and_the_others_zeros():
    from flowlab.compiler.boxing import build_sub_task_graph

    g = _Graph()
    decision = build_sub_task_graph(g, _edge("B", "P", [(0, 0), (0, 1)], [(0, 1), (0, 2)]))
    assert decision.builder == "NaiveB2PSubTskGphBuilder"
    assert [n.name for n in decision.nodes] == ["s1", "zeros@0:2"]  # device 1 holds the blob: it keeps it
    assert g.made == [("zeros", "zeros@0:2", ["s0"], "[0:4,0:2]", (4, 2))]


def test_boxing_across_machines_reads_through_copy_comm_net_on_the_receiving_machine():
    from flowlab.compiler.boxing import build_sub_task_graph

    g = _Graph()
    decision = build_sub_task_graph(g, _edge("S(0)", "B", [(0, 0), (1, 0)], [(1, 0), (1, 1)]))
    assert decision.comment == "BuildSubTaskGphS2B"
    # each gather on machine 1 reads machine 0's piece through a CopyCommNet task made on machine 1
    gathers = [m for m in g.made if m[0] == "copy"]
    assert [m[2] for m in gathers] == [["comm(s0)", "s1"], ["comm(s0)", "s1"]]
    assert all(n.machine_id == 1 for n in decision.nodes)
    with pytest.raises(CompileError, match="boxing not supported"):
        build_sub_task_graph(_Graph(), _edge("S(0)", "P", [(0, 0), (0, 1)], [(0, 0), (0, 1)]))


def test_a_remote_machines_pieces_are_combined_there_and_sent_once():
    """OneFlow's cross-machine slice boxing: concatenate (or add) on the source machine, then one CopyCommNet."""
    from flowlab.compiler.boxing import build_sub_task_graph

    g = _Graph()
    build_sub_task_graph(g, _edge("S(0)", "S(0)", [(0, 0), (0, 1)], [(1, 0)]))
    assert g.made == [("copy", "copy@0:0", ["s0", "s1"], "[0:4,0:2]", (4, 2)),
                      ("comm", "comm(copy@0:0)"),
                      ("copy", "copy@1:0", ["comm(copy@0:0)"], "[0:4,0:2]", (4, 2))]
    g = _Graph()
    build_sub_task_graph(g, _edge("P", "S(1)", [(0, 0), (0, 1), (1, 0)], [(1, 0), (1, 1)]))
    adds = [m for m in g.made if m[0] == "add"]
    assert adds[:3] == [("add", "add@0:0", ["s0", "s1"], "[0:4,0:1]", (4, 1)),  # machine 0's addends, added there
                        ("add", "add@1:0", ["comm(add@0:0)", "s2"], "[0:4,0:1]", (4, 1)),
                        ("add", "add@0:0", ["s0", "s1"], "[0:4,1:2]", (4, 1))]


@pytest.mark.parametrize("dst", ["B", "S(1)"])
def test_one_blob_read_the_same_way_by_two_ops_is_boxed_once(dst):
    """OneFlow builds one boxing sub-graph per (producer blob, consumer SBP, placement): two ops reading a blob
    the same way share it (boxing keyed by consumer op built it twice)."""
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def shared_job(x: tp.Numpy.Placeholder(SHAPE)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            a = flow.identity(x.with_distribute(flow.distribute.split(0)), name="src")
            b = flow.identity(a.with_distribute(distribute(dst)), name="r1")
            c = flow.math.negative(a.with_distribute(distribute(dst)), name="r2")
            return flow.identity((b + c + b).with_distribute(flow.distribute.broadcast()), name="out")

    np.testing.assert_array_equal(shared_job(X), X)
    plan = flow.default_session().plan
    boxing = [t for t in plan.tasks_of_job("shared_job")
              if t.is_boxing and t.exec_sequence[0].attrs.get("lbi") == "src/out_0"]
    single = [t for t in boxing if t.op_types == ("slice_boxing_copy",)]
    assert len(single) == 2  # one piece per destination device, not one per device per consumer
    rows = [r for r in flow.default_session().compiled.boxing_log[0] if r.startswith("src,")]
    assert sorted(r.split(",")[1] for r in rows) == ["r1", "r2"]  # the log still names every op edge
