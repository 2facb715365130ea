"""Dynamic blobs through the Plan (runtime/dynamic.py): a tp.ListNumpy piece smaller than its placeholder runs with
its own shape, as OneFlow's mirrored blobs do; each register carries the current shape in its header, each op
infers its outputs' current shapes from its inputs' at each act. Checked against NumPy float64 (values, and
gradients by finite differences), on one device and in the mirrored view of two."""

from __future__ import annotations

from typing import Tuple

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import JobAnnotationError


def _mirrored(devices: int) -> flow.FunctionConfig:
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())
    config.default_data_type(flow.float)
    return config


@pytest.mark.parametrize("devices", [1, 2])
def test_pieces_smaller_than_the_placeholder_run_with_their_own_shapes(devices):
    @flow.global_function(function_config=_mirrored(devices))
    def job(a: tp.ListNumpy.Placeholder((5, 3))) -> tp.ListNumpy:
        return flow.math.reduce_sum(flow.math.tanh(a) * 2.0, axis=1)

    rng = np.random.default_rng(0)
    for shapes in ([(3, 1), (4, 3)], [(5, 3), (1, 2)], [(2, 2), (2, 2)]):  # each call its own shapes
        xs = [rng.standard_normal(s).astype(np.float32) for s in shapes[:devices]]
        ys = job(xs)
        assert len(ys) == devices
        for x, y in zip(xs, ys):
            want = (np.tanh(x.astype(np.float64)) * 2.0).sum(axis=1)
            assert y.shape == want.shape
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_an_op_whose_output_shape_follows_the_inputs_infers_it_per_act():
    """concat of two dynamic pieces along axis 1: the output's current shape is inferred from both inputs'."""

    @flow.global_function(function_config=_mirrored(1))
    def job(a: tp.ListNumpy.Placeholder((4, 3)), b: tp.ListNumpy.Placeholder((4, 5))) -> tp.ListNumpy:
        return flow.concat([a, b], axis=1)

    a, b = np.ones((2, 1), np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = job([a], [b])
    np.testing.assert_array_equal(y, np.concatenate([a, b], axis=1))
    with pytest.raises(Exception, match=r"current shapes \[\[2, 1\], \[3, 3\]\]"):  # rows differ: the op's error
        job([a], [np.ones((3, 3), np.float32)])


def test_a_dynamic_blob_returned_as_tp_numpy_is_its_pieces_joined_or_oneflows_error():
    """OneFlow refuses tp.Numpy for a dynamic blob when tracing; flowlab joins the pieces where it can (full-size
    pieces give the static answer) and raises OneFlow's message where they differ beyond axis 0."""

    @flow.global_function(function_config=_mirrored(2))
    def job(a: tp.ListNumpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.math.abs(a)

    a, b = -np.ones((1, 3), np.float32), np.full((2, 3), -2.0, np.float32)
    np.testing.assert_array_equal(job([a, b]), np.concatenate([-a, -b]))
    with pytest.raises(JobAnnotationError, match="only fixed shaped blob compatible to oneflow.typing.Numpy"):
        job([a, np.ones((2, 2), np.float32)])


def _train(devices: int, got: dict[str, list]):
    """loss = sum(x * w, axis=1) on each device's piece, SGD with learning rate 1."""
    config = _mirrored(devices)

    def grab(g: tp.ListNumpy) -> None:
        got["dx"] = [np.array(p) for p in g]

    @flow.global_function(type="train", function_config=config)
    def train(x: tp.ListNumpy.Placeholder((5, 3))) -> tp.ListNumpy:
        w = flow.get_variable("w", shape=(1, 3), initializer=flow.constant_initializer(0.5))
        w = flow.cast_to_current_logical_view(w)
        x = x + flow.zeros_like(x)  # a blob with a gradient (the placeholder itself has none)
        flow.watch_diff(x, grab)
        loss = flow.math.reduce_sum(x * w, axis=1)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return loss

    return train


@pytest.mark.parametrize("devices", [1, 2])
def test_gradients_flow_to_the_pieces_current_shapes(devices):
    """The gradient of each piece has the piece's shape: w's row broadcast to it (d loss / dx = w)."""
    got: dict[str, list] = {}
    train = _train(devices, got)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(s).astype(np.float32) for s in [(2, 3), (4, 3)][:devices]]
    losses = train(xs)
    for x, loss in zip(xs, losses):
        np.testing.assert_allclose(loss, (x.astype(np.float64) * 0.5).sum(1), rtol=1e-5)
    assert [dx.shape for dx in got["dx"]] == [x.shape for x in xs]
    for dx in got["dx"]:
        np.testing.assert_array_equal(dx, np.full_like(dx, 0.5))


@pytest.mark.parametrize("devices", [1, 2])
def test_the_model_gradient_of_a_dynamic_loss_is_divided_by_its_current_instance_count(devices):
    """OneFlow's ScaleModelDiffByDynamicLossInstanceNum: the pieces' rows this call (2, and 2 + 3 on two devices),
    not the placeholder's (5 per device)."""
    train = _train(devices, {})
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(s).astype(np.float32) for s in [(2, 3), (3, 3)][:devices]]
    train(xs)
    dw = sum(x.astype(np.float64).sum(0, keepdims=True) for x in xs) / sum(len(x) for x in xs)
    np.testing.assert_allclose(flow.get_all_variables()["w"].numpy(), 0.5 - dw, rtol=1e-5, atol=1e-6)
    xs = [x[:1] for x in xs]  # another call, other counts
    before = flow.get_all_variables()["w"].numpy().astype(np.float64)
    train(xs)
    dw = sum(x.astype(np.float64).sum(0, keepdims=True) for x in xs) / len(xs)
    np.testing.assert_allclose(flow.get_all_variables()["w"].numpy(), before - dw, rtol=1e-5, atol=1e-6)


def test_the_policy_keeps_a_dynamic_plan_on_the_protocol_with_the_values_of_a_replayed_static_one(monkeypatch):
    """The same job, once with a tp.Numpy placeholder (replayed, fused) and once with a tp.ListNumpy one (dynamic:
    declined, the protocol runs every call): the same values for a full-size input; the dynamic one also takes
    smaller pieces."""
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)

    def body(a):
        return flow.math.sigmoid(a) * a

    flow.clear_default_session()

    @flow.global_function()
    def static(a: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return body(a)

    static_values = [static(x) for _ in range(6)]
    execution = flow.default_session().execution
    assert execution.replay, str(execution)

    @flow.global_function(function_config=_mirrored(1))
    def dynamic(a: tp.ListNumpy.Placeholder((4, 3))) -> tp.ListNumpy:
        return body(a)

    dynamic_values = [dynamic([x])[0] for _ in range(6)]
    execution = flow.default_session().execution
    assert not execution.replay and execution.executor in ("protocol", "threads")
    assert "dynamic blobs (Input_0/out" in execution.why("replay")
    assert "dynamic blobs" in str(execution)
    for s, d in zip(static_values, dynamic_values):
        np.testing.assert_array_equal(s, d)
    (small,) = dynamic([x[:2, :1]])
    np.testing.assert_allclose(small, body_np(x[:2, :1]), rtol=1e-6)


def body_np(a: np.ndarray) -> np.ndarray:
    a64 = a.astype(np.float64)
    return (a64 / (1 + np.exp(-a64))).astype(np.float32)


@pytest.mark.parametrize("devices", [1, 2])
def test_shape_elem_cnt_reads_the_current_shape_and_cast_to_static_shape_ends_the_dynamic_blob(devices):
    @flow.global_function(function_config=_mirrored(devices))
    def counts(a: tp.ListNumpy.Placeholder((5, 3))) -> Tuple[tp.ListNumpy, tp.ListNumpy, tp.ListNumpy]:
        return _body(a)

    def _body(a):
        s = flow.cast_to_static_shape(a * 2.0)
        assert not s.is_dynamic and a.is_dynamic
        return flow.math.reduced_shape_elem_cnt(a), flow.math.reduced_shape_elem_cnt(a, axis=[0], dtype=flow.float), s

    xs = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((4, 1), np.float32)][:devices]
    n_all, n_rows, static = counts(xs)
    for x, n, r, s in zip(xs, n_all, n_rows, static):
        assert n.dtype == np.int32 and n.tolist() == [x.size]
        assert r.dtype == np.float32 and r.tolist() == [x.shape[0]]
        assert s.shape == (5, 3)  # static: the placeholder's shape, the piece as its first elements
        np.testing.assert_array_equal(s.reshape(-1)[:x.size], (x * 2).reshape(-1))
