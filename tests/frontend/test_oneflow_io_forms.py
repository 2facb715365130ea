"""OneFlow v0.3.4's I/O forms (``framework/typing.py``, ``typing_util.py``, ``local_blob.py``): a job without a
return annotation returns a future whose ``.get()`` is a local blob (``.numpy()``, ``.numpy_list()``); the same
blob for an unannotated watch handler and for ``flow.get_all_variables()``'s values; ``tp.ListListNumpy``; and
``Tuple[...]`` of placeholders as a parameter annotation (``test_global_function_signature.py``)."""

from __future__ import annotations

from typing import Tuple

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import JobAnnotationError, JobArgumentError
from flowlab.local_blob import LocalMirroredTensor

X = np.arange(12, dtype=np.float32).reshape(4, 3)


@pytest.fixture(autouse=True)
def _fresh():
    flow.clear_default_session()
    yield
    flow.clear_default_session()
    flow.config.cpu_device_num(1)


def test_annotated_parameters_without_return_annotation_return_a_future_of_a_local_blob():
    """OneFlow's TransformGlobalFunctionResult hands back the future itself when the return is not annotated
    (flowlab used to refuse such a function)."""

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))):
        return x * 2.0 + 1.0

    future = job(X)
    blob = future.get()
    assert isinstance(blob, LocalMirroredTensor)
    assert type(blob.numpy()) is np.ndarray
    np.testing.assert_array_equal(blob.numpy(), X * 2 + 1)
    assert len(blob.numpy_list()) == 1 and blob.parallel_num() == 1
    np.testing.assert_array_equal(blob.numpy(0), X * 2 + 1)
    assert not blob.is_dynamic
    assert type(blob + 1) is np.ndarray  # arithmetic gives plain arrays, as OneFlow forwards to numpy()
    got = []
    job(X + 1).async_get(got.append)
    np.testing.assert_array_equal(got[0].numpy(), (X + 1) * 2 + 1)


def test_a_future_of_a_tuple_and_of_a_dict():
    @flow.global_function()
    def pair(x: tp.Numpy.Placeholder((4, 3))):
        return x + 1.0, {"neg": -x}

    first, rest = pair(X).get()
    np.testing.assert_array_equal(first.numpy(), X + 1)
    np.testing.assert_array_equal(rest["neg"].numpy(), -X)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_mirrored_future_gives_each_devices_piece_and_the_joined_blob(devices):
    """OneFlow's LocalMirroredTensor of a mirrored blob: numpy_list() one array per device, numpy() them joined on
    the batch axis."""
    flow.config.cpu_device_num(devices)
    cfg = flow.FunctionConfig()
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=cfg)
    def job(x: tp.ListNumpy.Placeholder((2, 3))):
        return flow.math.square(x)

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    blob = job(list(np.split(x, devices))).get()
    assert blob.parallel_num() == devices
    for piece, want in zip(blob.numpy_list(), np.split(x, devices)):
        np.testing.assert_array_equal(piece, want * want)
    np.testing.assert_array_equal(blob.numpy(), x * x)
    np.testing.assert_array_equal(blob.numpy(1), np.split(x, devices)[1] ** 2)
    with pytest.raises(IndexError, match="device index"):
        blob.numpy(devices)


def test_unannotated_watch_and_watch_diff_handlers_get_local_blobs():
    """OneFlow's TransformWatchedBlob: no annotation, the local blob itself (``.numpy()``); tp.Numpy an array."""
    seen, diffs, arrays = [], [], []

    def bare(blob):
        seen.append(blob)

    def as_numpy(value: tp.Numpy):
        arrays.append(value)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        w = flow.get_variable("w", (4, 3), initializer=flow.constant_initializer(0.5))
        y = x * w
        flow.watch(y, bare)
        flow.watch(y, as_numpy)
        flow.watch_diff(y, diffs.append)  # a builtin's parameter has no annotation either
        loss = flow.math.reduce_sum(flow.math.square(y))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return loss

    train(X)
    assert isinstance(seen[0], LocalMirroredTensor) and type(arrays[0]) is np.ndarray
    np.testing.assert_array_equal(seen[0].numpy(), X * 0.5)
    np.testing.assert_array_equal(seen[0].numpy_list()[0], X * 0.5)
    assert isinstance(diffs[0], LocalMirroredTensor)
    np.testing.assert_allclose(diffs[0].numpy(), 2 * X * 0.5, rtol=1e-6)  # d sum(y^2) / dy


def test_an_unannotated_watch_of_a_mirrored_blob_gets_each_devices_piece():
    flow.config.cpu_device_num(2)
    seen = []

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> None:
        with flow.scope.mirrored_view():
            flow.watch(x * 2.0, seen.append)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    job(list(np.split(x, 2)))
    assert seen[0].parallel_num() == 2
    for piece, want in zip(seen[0].numpy_list(), np.split(x * 2, 2)):
        np.testing.assert_array_equal(piece, want)
    np.testing.assert_array_equal(seen[0].numpy(), x * 2)


def test_get_all_variables_values_are_local_blobs():
    """OneFlow's test_checkpoint reads ``flow.get_all_variables()["y"].numpy()``."""

    @flow.global_function()
    def job() -> tp.Numpy:
        return flow.get_variable("v", (2, 3), initializer=flow.constant_initializer(1.5))

    job()
    value = flow.get_all_variables()["v"]
    np.testing.assert_array_equal(value.numpy(), np.full((2, 3), 1.5, np.float32))
    assert value.shape == (2, 3) and value.numpy_list()[0].shape == (2, 3)
    flow.load_variables({"v": value * 2})  # a local blob is an ndarray: loads back as one
    np.testing.assert_array_equal(job(), np.full((2, 3), 3.0, np.float32))


def test_list_list_numpy_placeholder_and_return():
    """test_global_function_signature.py: ``foo([[data]])[0][0]``; per device a tensor list (flowlab: of one)."""
    cfg = flow.FunctionConfig()
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=cfg)
    def foo(x: tp.ListListNumpy.Placeholder((10,))) -> tp.ListListNumpy:
        return x + 1.0

    data = np.arange(10, dtype=np.float32)
    out = foo([[data]])
    assert len(out) == 1 and len(out[0]) == 1
    np.testing.assert_array_equal(out[0][0], data + 1)
    with pytest.raises(JobArgumentError, match="dynamic blob"):
        foo([[data, data]])
    with pytest.raises(JobArgumentError, match="one list of ndarrays per device"):
        foo([data])


def test_a_smaller_list_numpy_piece_is_a_dynamic_blob_and_a_larger_one_is_refused():
    """OneFlow takes a smaller piece as a dynamic blob (test_function_input_output.py::test_MirroredTensorDef):
    it comes back with its own shape; a larger one, or one of another rank, is refused naming the argument."""

    @flow.global_function()
    def foo(x: tp.ListNumpy.Placeholder((2, 5))) -> tp.ListNumpy:
        return x

    piece = np.arange(5, dtype=np.float32).reshape(1, 5)
    (got,) = foo([piece])
    np.testing.assert_array_equal(got, piece)
    with pytest.raises(JobArgumentError, match=r"argument 'x\[0\]' is a ListNumpy placeholder of shape \(2, 5\).*"
                                               r"shape mismatch: shape \(3, 5\)$"):  # larger
        foo([np.ones((3, 5), np.float32)])
    with pytest.raises(JobArgumentError, match=r"argument 'x\[0\]'.*rank mismatch: shape \(2,\)$"):
        foo([np.ones((2,), np.float32)])


def test_list_list_numpy_watch_handler():
    got = []

    def handler(x: tp.ListListNumpy):
        got.append(x)

    @flow.global_function()
    def foo(x: tp.Numpy.Placeholder((4, 3))) -> None:
        flow.watch(x * 3.0, handler)

    foo(X)
    np.testing.assert_array_equal(got[0][0][0], X * 3)


def test_tuple_of_placeholders_as_a_parameter():
    """OneFlow's _RecusiveMakeInputBlobDef: a Tuple[...] parameter is a tuple of input blobs."""

    @flow.global_function()
    def foo(x: Tuple[tp.Numpy.Placeholder((4, 3)), tp.Numpy.Placeholder((3,))],
            z: tp.Numpy.Placeholder((4, 3))) -> Tuple[tp.Numpy, tp.Numpy]:
        a, b = x
        return a + b, a * z

    b = np.array([1, 2, 3], np.float32)
    first, second = foo((X, b), X)
    np.testing.assert_array_equal(first, X + b)
    np.testing.assert_array_equal(second, X * X)
    with pytest.raises(JobArgumentError, match="expected a tuple of 2"):
        foo(X, X)
    with pytest.raises(JobArgumentError, match=r"'x\[1\]' must be a numpy.ndarray of shape \(3,\)"):
        foo((X, X), X)
    again = foo(x=(X + 1, b), z=X)  # by keyword too; the second call goes the general path as well
    np.testing.assert_array_equal(again[0], X + 1 + b)


def test_nested_tuple_and_list_numpy_inside_a_tuple():
    cfg = flow.FunctionConfig()
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=cfg)
    def foo(x: Tuple[tp.ListNumpy.Placeholder((10,)), Tuple[tp.ListNumpy.Placeholder((10,))]]
            ) -> Tuple[tp.ListNumpy]:
        a, (b,) = x
        return (a - b,)

    data = np.arange(10, dtype=np.float32)
    (out,) = foo(([data], ([data * 3],)))
    np.testing.assert_array_equal(out[0], -2 * data)


def test_bad_tuple_annotation_is_named():
    with pytest.raises(JobAnnotationError, match="names each placeholder"):
        @flow.global_function()
        def foo(x: Tuple[tp.Numpy.Placeholder((2,)), ...]) -> tp.Numpy:
            return x[0]
