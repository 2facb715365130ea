"""The issue's seed programs, checked against numpy.pad."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp


def reflect(x, p):
    return np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), mode="reflect")


def zeros(x, p):
    return np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))


X = np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32)


def test_pad_job(kernel_impl):
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    out = pad_Job(X)
    np.testing.assert_array_equal(out, reflect(X, 1))
    assert out[0, 0, 0].tolist() == [4.0, 3.0, 4.0, 5.0, 4.0]  # by hand: row 1 reflected, then columns


def test_two_jobs_called_in_any_order(kernel_impl):
    @flow.global_function()
    def zero_pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            flow.reflection_pad2d(x, padding=1)  # built but unused: it still runs, and nobody reads it
            return flow.zero_pad2d(x, padding=2)

    @flow.global_function()
    def reflection_pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    np.testing.assert_array_equal(zero_pad_Job(X), zeros(X, 2))
    np.testing.assert_array_equal(zero_pad_Job(X + 1), zeros(X + 1, 2))
    np.testing.assert_array_equal(reflection_pad_Job(X * 2), reflect(X * 2, 1))
    names = [j.name for j in flow.default_session().job_set]
    assert names[:2] == ["zero_pad_Job", "reflection_pad_Job"]
    assert "System-Push-Input_0" in names and "System-Push-Input_1" in names


def test_tuple_return():
    @flow.global_function()
    def both(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tuple[tp.Numpy, tp.Numpy]:
        return flow.reflection_pad2d(x, padding=1), flow.zero_pad2d(x, padding=[1, 2, 0, 1])

    a, b = both(X)
    np.testing.assert_array_equal(a, reflect(X, 1))
    # [left, right, top, bottom] = [1, 2, 0, 1] (OneFlow v0.4 order)
    np.testing.assert_array_equal(b, np.pad(X, ((0, 0), (0, 0), (0, 1), (1, 2))))


def test_callback_runs_after_pull_in_launch_order():
    @flow.global_function()
    def pad_cb(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Callback[tp.Numpy]:
        return flow.reflection_pad2d(x, padding=1)

    seen = []
    for k in range(4):
        caller = pad_cb(X + k)
        assert callable(caller)
        caller(lambda out, k=k: seen.append((k, out.copy())))
    assert [k for k, _ in seen] == [0, 1, 2, 3]
    for k, out in seen:
        np.testing.assert_array_equal(out, reflect(X + k, 1))


def test_list_numpy_and_dict_returns():
    @flow.global_function()
    def lists(x: tp.ListNumpy.Placeholder((2, 1, 3, 3))) -> dict[str, tp.ListNumpy]:
        return {"r": flow.reflection_pad2d(x, padding=1)}

    out = lists([X])
    assert list(out) == ["r"] and len(out["r"]) == 1
    np.testing.assert_array_equal(out["r"][0], reflect(X, 1))


def test_legacy_unannotated_job_returns_future():
    @flow.global_function()
    def legacy(x=tp.FixedTensorDef((2, 1, 3, 3))):  # noqa: B008 (OneFlow's legacy style)
        return flow.reflection_pad2d(x, padding=1)

    np.testing.assert_array_equal(legacy(X).get(), reflect(X, 1))


def test_none_return_runs_the_job():
    @flow.global_function()
    def nothing(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> None:
        flow.reflection_pad2d(x, padding=1)

    assert nothing(X) is None
    assert flow.default_session().runtime.actor("reflection_pad2d_0").act_id == 1


def test_results_do_not_alias_runtime_memory():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    first = pad_Job(X)
    pad_Job(X * 0)
    np.testing.assert_array_equal(first, reflect(X, 1))  # the second run did not overwrite it
