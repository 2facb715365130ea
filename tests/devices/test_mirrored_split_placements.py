"""Mirrored readers of one consistent blob on two placements: OneFlow converts the blob once
(``FindOrCreateMirroredLbiFromCompatibleConsistentBlob`` caches by blob), on the blob's own placement
(``ParallelDesc4Lbi``), whichever reader asks first; a reader on other devices (as many) reads device i's piece of
it, as OneFlow's sub-op i reads sub-blob i. Before, only a reader on the producer's placement was converted, so a
first (or only) reader elsewhere read the consistent blob and failed to infer per device."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

VALUE = np.arange(16, dtype=np.float32).reshape(4, 4)
HOME, OTHER = "0:0-1", "0:2-3"


def _job(kind: str, readers: tuple[str, ...], train: bool = False):
    """w (4, 4) on HOME, lying S(0) ("split") or B ("clone"); per device r = reduce_sum(w * 2, axis=0) read on
    each placement in ``readers`` order (mirrored ops)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(4)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    dist = flow.distribute.split(0) if kind == "split" else flow.distribute.broadcast()

    def body() -> list:
        with flow.scope.placement("cpu", HOME):
            w = flow.get_variable("w", shape=(4, 4), initializer=flow.zeros_initializer(), distribute=dist)
        outs = []
        for where in readers:
            with flow.scope.placement("cpu", HOME if where == "home" else OTHER):
                outs.append(flow.math.reduce_sum(w * 2.0, axis=0, keepdims=True))
        return outs

    if train:  # per-device data on the reader's devices: the loss is each device's own
        config.default_placement_scope(flow.scope.placement("cpu", OTHER))

        @flow.global_function(type="train", function_config=config)
        def job(x: tp.ListNumpy.Placeholder((1, 4))) -> tp.ListNumpy:
            (r,) = body()
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.0).minimize(
                (r + x) * (r + x))
            return r
    else:
        @flow.global_function(function_config=config)
        def job() -> tuple[tp.ListNumpy, tp.ListNumpy]:
            outs = body()
            return outs[0], outs[-1]

    flow.load_variables({"w": VALUE})
    return job


def _rows(kind: str) -> list[slice]:
    return [slice(0, 2), slice(2, 4)] if kind == "split" else [slice(None)] * 2


@pytest.mark.parametrize("kind", ["split", "clone"])
@pytest.mark.parametrize("readers", [("home", "other"), ("other", "home"), ("other",)],
                         ids=["home_first", "other_first", "other_only"])
def test_one_conversion_per_blob_on_its_placement_read_on_both(kind, readers):
    results = _job(kind, readers)()
    for pieces in results:  # each placement's device i: its piece of w (all of it for a clone), summed
        assert len(pieces) == 2
        for got, rows in zip(pieces, _rows(kind)):
            np.testing.assert_array_equal(got, (VALUE[rows] * 2.0).sum(axis=0, keepdims=True))
    user = flow.default_session().job_set.job("job")
    (conv,) = [op for op in user.ops if op.op_type == f"distribute_{kind}"]
    assert conv.input_lbns == ("w/out",) and str(conv.parallel_conf) == f"cpu:{HOME}"
    scalar_muls = [op for op in user.ops if op.op_type == "scalar_mul"]
    assert len(scalar_muls) == len(readers) and all(op.input_lbns == conv.output_lbns for op in scalar_muls)
    # no mirrored op reads the consistent w itself: only the conversion does
    assert [op.name for op in user.ops if "w/out" in op.input_lbns] == [conv.name]


@pytest.mark.parametrize("kind", ["split", "clone"])
def test_a_reader_on_other_devices_trains_the_variable(kind):
    """loss_i = (r_i + x_i)^2 on the other placement: w's gradient is each device's own (split: its rows; clone:
    the devices' sum), back through the copy and the conversion's gradient."""
    job = _job(kind, ("other",), train=True)
    w = VALUE.copy()
    xs = [np.full((1, 4), -3.0, np.float32), np.arange(4, dtype=np.float32).reshape(1, 4)]
    for _ in range(2):
        got = job(xs)
        # one (1, 4) loss piece per device, dynamic (ListNumpy): OneFlow counts its rows, 1 per device
        grad, count = np.zeros_like(w), 2
        for piece, x, rows in zip(got, xs, _rows(kind)):
            r = (w[rows] * 2.0).sum(axis=0, keepdims=True)
            np.testing.assert_allclose(piece, r, rtol=1e-6)
            grad[rows] += np.broadcast_to(2.0 * 2.0 * (r + x) / count, w[rows].shape)
        w = w - 0.1 * grad
    np.testing.assert_allclose(flow.get_all_variables()["w"], w, rtol=1e-5)


@pytest.mark.parametrize("reader", [HOME, OTHER])
def test_a_split_variable_trains_through_a_matmul_on_either_placement(reader):
    """Device i's gradient of its rows of w, a matmul's over its batch (lying P), reaches the split's concat on
    w's placement as that device's own piece (through a copy where the reader is elsewhere), never summed with the
    other device's."""
    flow.clear_default_session()
    flow.config.cpu_device_num(4)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    config.default_placement_scope(flow.scope.placement("cpu", reader))

    @flow.global_function(type="train", function_config=config)
    def job(x: tp.ListNumpy.Placeholder((2, 4))) -> tp.ListNumpy:
        with flow.scope.placement("cpu", HOME):
            w = flow.get_variable("w", shape=(4, 4), initializer=flow.zeros_initializer(),
                                  distribute=flow.distribute.split(0))
        h = flow.matmul(x, w, transpose_b=True)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.0).minimize(h * h)
        return h

    value = VALUE / 10
    flow.load_variables({"w": value})
    xs = [np.ones((2, 4), np.float32), np.arange(8, dtype=np.float32).reshape(2, 4)]
    got, want = job(xs), value.copy()
    for i, (piece, x) in enumerate(zip(got, xs)):
        h = x @ value[2 * i:2 * i + 2].T
        np.testing.assert_allclose(piece, h, rtol=1e-6)
        # the loss count: the dynamic (ListNumpy) loss's rows, 2 on each device (OneFlow's dynamic instance number)
        want[2 * i:2 * i + 2] -= 0.1 * (2 * h / 4).T @ x
    np.testing.assert_allclose(flow.get_all_variables()["w"], want, rtol=1e-5)
    user = flow.default_session().job_set.job("job")
    (concat,) = [op for op in user.ops if op.op_type == "distribute_concat"]
    assert str(user.sbp_signatures[concat.name]) == "{in: P, out: S(0)}"
