"""Conv chains (kernels/numba_cpu/chains.py): a conv with its bias_add, relu and 2x2 max pool, and its gradients
with the pool's and the relu's, run sample by sample in one kernel of a fused segment. Each chain must leave every
memory block with the bytes its ops leave run one by one over the whole batch, also where the Plan reuses blocks
(the relu writing over the conv's output), and must be refused where the sample-by-sample order would read a
value too early or too late."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels.numba_cpu import chains
from flowlab.kernels.numba_cpu import conv as conv_kernels
from flowlab.kernels.registry import FusedCall, Owned, chain_at
from flowlab.replay.fused import fused_call_of

BATCH = 6


def _run(call: FusedCall) -> None:
    call.fn(*(a.array if isinstance(a, Owned) else a for a in call.args))


def _chains(calls: list[FusedCall]) -> list[tuple[int, FusedCall, int]]:
    """(index, chain call, calls it stands for) as a fused segment walks the calls (replay/fused.py)."""
    found, i = [], 0
    while i < len(calls):
        merged, count = chain_at(calls, i)
        if count > 1:
            found.append((i, merged, count))
        i += count
    return found


@pytest.fixture(scope="module")
def lenet():
    """A small LeNet (conv 5x5 SAME, relu, 2x2 max pool, twice; dense) trained three calls on Numba's kernels;
    its runtime and its schedule's kernel calls in act order."""
    mp = pytest.MonkeyPatch()
    mp.setenv("FLOWLAB_KERNELS", "numba")
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, 2, 12, 12)),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        init = flow.truncated_normal(0.1)
        conv1 = flow.layers.conv2d(images, 6, 5, padding="SAME", activation=flow.nn.relu, name="conv1",
                                   kernel_initializer=init)
        pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
        conv2 = flow.layers.conv2d(pool1, 8, 3, padding="SAME", activation=flow.nn.relu, name="conv2",
                                   kernel_initializer=init)
        pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
        logits = flow.layers.dense(flow.reshape(pool2, [BATCH, -1]), 10, kernel_initializer=init, name="dense")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    rng = np.random.default_rng(5)
    for _ in range(3):
        train_job(rng.standard_normal((BATCH, 2, 12, 12)).astype(np.float32),
                  rng.integers(0, 10, BATCH).astype(np.int32))
    rt = flow.default_session().runtime
    schedule = rt.layer.last
    calls = [fused_call_of(actor, step) for step, actor in zip(schedule.steps, schedule.step_actors)
             if actor is not None]
    yield rt, [call for call in calls if call is not None]
    flow.clear_default_session()
    mp.undo()


def test_lenet_runs_two_forward_and_two_backward_chains(lenet) -> None:
    _, calls = lenet
    found = [(merged.fn, [c.fn.py_func.__name__ for c in calls[i:i + count]]) for i, merged, count in _chains(calls)]
    forward = ["_conv_fwd", "_bias_add", "_relu", "_max_pool_2x2"]
    assert [names for fn, names in found if fn is chains._conv_chain] == [forward, forward]
    # conv2's gradients: the data gradient joins the chain, its filter gradient runs alone; conv1 (it reads the
    # job's input) has no data gradient
    assert [names for fn, names in found if fn is chains._conv_grad_chain] == [
        ["_max_pool_2x2_grad", "_relu_grad", "_sum_middle", "_conv_data_grad"],
        ["_max_pool_2x2_grad", "_relu_grad", "_sum_middle", "_conv_filter_grad"]]


def test_each_chain_leaves_every_block_as_its_ops_one_by_one(lenet) -> None:
    rt, calls = lenet
    arenas = list(rt.arenas.values())
    checked = reused = 0
    for i, merged, count in _chains(calls):
        start = [a.copy() for a in arenas]
        for call in calls[i:i + count]:
            _run(call)
        want = [a.copy() for a in arenas]
        for a, s in zip(arenas, start):
            a[...] = s
        _run(merged)
        for k, (a, w) in enumerate(zip(arenas, want)):
            assert a.tobytes() == w.tobytes(), f"chain at call {i}: block {k} differs"
        assert any(not np.array_equal(s, w) for s, w in zip(start, want))  # the chain's ops did write
        checked += 1
        if merged.fn is chains._conv_chain:  # (conv, y, relu, r): the Plan's block reuse is among the cases
            reused += merged.args[2].ctypes.data == merged.args[8].ctypes.data
    assert checked == 4
    assert reused >= 1


def test_a_chain_whose_order_would_change_what_is_read_is_refused(lenet) -> None:
    """The bias_add's output one sample ahead of the conv's (z[s] over y[s + 1]): by sample, the bias of sample s
    would be overwritten by the conv of sample s + 1; the whole-batch order writes it after. The chain is refused,
    and run anyway it gives other bytes (so the check is what keeps the bits)."""
    _, calls = lenet
    at = next(i for i, c in enumerate(calls) if c.fn is conv_kernels._conv_fwd)
    conv, bias = calls[at], calls[at + 1]
    x, w, y, *owned = conv.args
    a3, b, _ = bias.args
    per = y.size // BATCH
    buffer = np.zeros(y.size + per, y.dtype)
    y2, z2 = buffer[:y.size], buffer[per:]
    calls2 = [dataclasses.replace(conv, args=(x, w, y2, *owned)),
              dataclasses.replace(bias, args=(y2.reshape(a3.shape), b, z2.reshape(a3.shape)))]
    assert chains._forward(calls2, 0) is None
    for call in calls2:
        _run(call)
    want = buffer.copy()
    buffer[...] = 0
    _run(FusedCall(chains._conv_chain, (x, w, y2, *owned, b, z2, *(Owned(np.empty((0,) * d, y.dtype))
                                                                  for d in (1, 3, 3)), 1)))
    assert buffer.tobytes() != want.tobytes()


def test_sample_order_rule_by_hand() -> None:
    A = chains._Access
    same = [A(0, True, 0, 8, 8), A(1, True, 0, 8, 8)]  # an op writing over an earlier op's output, sample for sample
    assert chains._sample_ordered(same, 4)
    behind = [A(0, True, 0, 8, 8), A(1, True, 8, 8, 8)]  # the later op's sample s over the earlier's s + 1
    assert not chains._sample_ordered(behind, 4)
    ahead = [A(0, True, 8, 8, 8), A(1, True, 0, 8, 8)]  # ... over the earlier's s - 1: already done with
    assert chains._sample_ordered(ahead, 4)
    quarter = [A(0, False, 0, 8, 8), A(1, True, 0, 2, 2)]  # a pool's output over its input's block, from the start
    assert chains._sample_ordered(quarter, 4)
    whole = [A(0, False, 0, 8, 8), A(1, True, 0, 0, 16)]  # a later op writing a whole array a sample still reads
    assert not chains._sample_ordered(whole, 4)
    assert chains._sample_ordered([A(0, False, 0, 8, 8), A(1, True, 0, 0, 16, after=True)], 4)
    assert not chains._sample_ordered([A(0, True, 0, 0, 16, after=True), A(1, False, 0, 8, 8)], 4)
    assert chains._sample_ordered([A(0, False, 0, 8, 8), A(1, False, 0, 0, 16)], 4)  # reads never conflict
