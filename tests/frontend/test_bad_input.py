"""Every bad input of the foundation issue: a clear error, and the session still works afterwards."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import (
    JobAnnotationError,
    JobArgumentError,
    OpInferError,
    PlacementError,
    SessionStateError,
)

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


def define_pad():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return pad_Job


def still_works(job):
    np.testing.assert_array_equal(job(X), np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


@pytest.mark.parametrize(
    "value, words",
    [
        (np.zeros((2, 1, 3, 4), np.float32), ["shape (2, 1, 3, 3)", "shape mismatch", "(2, 1, 3, 4)"]),
        (np.zeros((2, 9), np.float32), ["rank mismatch", "(2, 9)"]),
        (np.zeros((2, 1, 3, 3), np.float64), ["dtype float32", "got dtype float64", "astype"]),
        ([[1.0]], ["numpy.ndarray", "got list"]),
    ],
)
def test_bad_array_argument(value, words):
    job = define_pad()
    with pytest.raises(JobArgumentError) as err:
        job(value)
    assert "argument 'x'" in str(err.value) and "pad_Job" in str(err.value)
    for w in words:
        assert w in str(err.value)
    still_works(job)


def test_wrong_number_of_arguments():
    job = define_pad()
    with pytest.raises(JobArgumentError, match=r"takes 1 argument\(s\) \(x\); got 2 positional"):
        job(X, X)
    with pytest.raises(JobArgumentError, match=r"missing argument\(s\) \['x'\]"):
        job()
    still_works(job)


def test_missing_and_unsupported_annotations():
    with pytest.raises(JobAnnotationError, match=r"annotate every parameter or none.*\['y'\]"):

        @flow.global_function()
        def half(x: tp.Numpy.Placeholder((2,)), y) -> tp.Numpy:
            return x

    with pytest.raises(JobAnnotationError, match="is annotated with <class 'int'>"):

        @flow.global_function()
        def wrong_param(x: int) -> tp.Numpy:
            return x

    with pytest.raises(JobAnnotationError, match="unsupported return annotation"):

        @flow.global_function()
        def wrong_return(x: tp.Numpy.Placeholder((2,))) -> np.ndarray:
            return x

    # annotated parameters without a return annotation return OneFlow's future (tests/frontend/test_oneflow_io_forms.py)
    still_works(define_pad())


def test_incompatible_shapes_point_at_the_user_line():
    @flow.global_function()
    def bad(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)  # the line the error must name

    line = bad.__wrapped__.__code__.co_firstlineno + 2
    with pytest.raises(OpInferError) as err:
        bad(np.zeros((2, 3), np.float32))
    msg = str(err.value)
    assert f"test_bad_input.py:{line}" in msg
    assert "reflection_pad2d" in msg and "f32[2,3]" in msg and "4-D NCHW" in msg
    flow.clear_default_session()
    still_works(define_pad())


def test_reflection_padding_too_large():
    @flow.global_function()
    def bad(x: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=2)

    with pytest.raises(OpInferError, match=r"smaller than the padded dimension: padding \[2, 2, 2, 2\].*H=2, W=2"):
        bad(np.zeros((1, 1, 2, 2), np.float32))


def test_a_failed_trace_leaves_the_session_open_and_fixable():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    with pytest.raises(OpInferError):
        job(np.zeros((2, 3), np.float32))
    assert flow.default_session().status.value == "OPEN"

    @flow.global_function()  # redefining the same name while OPEN replaces it
    def job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.zero_pad2d(x, padding=1)

    np.testing.assert_array_equal(job(X), np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1))))


def test_return_value_that_is_not_a_blob():
    @flow.global_function()
    def bad(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return np.zeros(3)

    with pytest.raises(JobAnnotationError, match="returned ndarray at top level; its annotation expects a blob"):
        bad(X)
    flow.clear_default_session()
    still_works(define_pad())


def test_op_given_a_non_blob():
    @flow.global_function()
    def bad(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(np.zeros((2, 1, 3, 3)), padding=1)

    with pytest.raises(OpInferError, match="must be a blob made inside this job function; got ndarray"):
        bad(X)


def test_unknown_config_field_suggests_close_names():
    config = flow.FunctionConfig()
    with pytest.raises(AttributeError, match=r"no field 'default_data_typ'; did you mean default_data_type"):
        config.default_data_typ(flow.float)
    with pytest.raises(AttributeError, match=r"no field 'train.primary_l'; did you mean train.primary_lr"):
        config.train.primary_l(0.1)
    with pytest.raises(TypeError, match="takes a DType; got 'float'"):
        config.default_data_type("float")
    config.default_data_type(flow.float)
    from flowlab.frontend import function_config

    function_config._warned.discard("train.primary_lr")  # it warns once a process
    with pytest.warns(UserWarning, match="comes from flow.optimizer"):
        config.train.primary_lr(0.1)
    assert config.get("train.primary_lr") == 0.1 and config.get("default_data_type") is flow.float32


def test_ignored_config_field_warns_once():
    from flowlab.frontend import function_config

    function_config._warned.discard("use_xla_jit")
    config = flow.FunctionConfig()
    with pytest.warns(UserWarning, match="does not act on it"):
        config.use_xla_jit(True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config.use_xla_jit(False)  # no second warning


@pytest.mark.parametrize(
    "tag, ids, words",
    [
        ("tpu", "0:0", "device_tag must be one of ('cpu', 'gpu'); got 'tpu'"),
        ("cpu", "0:0-x", "malformed machine_device_ids entry '0:0-x'"),
        ("cpu", "0:2-1", "ends before it starts"),
        ("cpu", "0:0-1", "names cpu device 1, but flow.config.cpu_device_num is 1"),  # several devices: legal
        ("cpu", "1:0", "names machine 1, but no flow.env.machine(...) was given"),
        ("cpu", ["0:0", "0:0"], "names device 0:0 twice"),
        ("cpu", "0:1", "cpu_device_num is 1"),
    ],
)
def test_bad_placements(tag, ids, words):
    with pytest.raises(PlacementError) as err:
        flow.scope.placement(tag, ids)
    assert words in str(err.value)


def test_gpu_placement_falls_back_to_cpu_with_one_warning(monkeypatch):
    from flowlab.frontend import scope

    monkeypatch.setattr(scope, "_cuda_probe", [False])  # a machine with neither a GPU nor the simulator
    scope._gpu_warned = False
    with pytest.warns(UserWarning, match="'gpu' placements run on the CPU"):
        flow.scope.placement("gpu", "0:0")

    @flow.global_function()
    def on_gpu(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0"):  # no second warning
            return flow.reflection_pad2d(x, padding=1)

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = on_gpu(X)
    np.testing.assert_array_equal(out, np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    assert flow.default_session().job_set.job("on_gpu").op("reflection_pad2d_0").device_tag == "cpu"


def test_decorating_after_the_session_started():
    job = define_pad()
    still_works(job)
    with pytest.raises(SessionStateError, match=r"session is RUNNING.*clear_default_session\(\)"):

        @flow.global_function()
        def late(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
            return x

    still_works(job)


def test_calling_a_job_after_clear_default_session():
    job = define_pad()
    still_works(job)
    flow.clear_default_session()
    still_works(job)  # the new session is OPEN: the job re-registers cleanly
    flow.clear_default_session()

    @flow.global_function()
    def first(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.zero_pad2d(x, padding=1)

    first(X)  # this session is now RUNNING without `job`
    with pytest.raises(SessionStateError, match="belongs to a session that was cleared"):
        job(X)


def test_global_function_bad_type():
    with pytest.raises(ValueError, match=r"must be one of \('predict', 'train'\); got 'eval'"):
        flow.global_function(type="eval")


def test_division_by_zero_follows_numpy_in_both_kernel_modes(kernel_impl):
    @flow.global_function()
    def ratio(x: tp.Numpy.Placeholder((3,)), y: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x / y

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy warns about 0/0 in reference mode
        out = ratio(np.array([1, 0, -1], np.float32), np.zeros(3, np.float32))
    assert out[0] == np.inf and np.isnan(out[1]) and out[2] == -np.inf


def test_a_raising_kernel_names_the_op_and_the_session_stays_usable(monkeypatch):
    """Was: ...and_closes_the_session. A kernel error now cancels the call and keeps the session (issue 9)."""
    from flowlab.errors import KernelError
    from flowlab.kernels import registry

    # one implementation patched: the run uses only it, and no background compile (the tiered mode's) of an earlier
    # session's kernel calls the patched factory
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")
    job = define_pad()
    still_works(job)
    flow.clear_default_session()
    job = define_pad()
    factory = registry.get_kernel_factory("reflection_pad2d", "numba")
    failures = [True]

    def broken(ctx):
        kernel = factory(ctx)

        def failing(ins, outs):
            if failures:
                failures.pop()
                raise MemoryError("simulated")
            kernel(ins, outs)

        return failing

    monkeypatch.setitem(registry._KERNELS, ("reflection_pad2d", "numba", "cpu"), broken)
    with pytest.raises(KernelError, match=r"op 'reflection_pad2d_0' \(reflection_pad2d\) \(created at "
                                          r"test_bad_input.py:\d+\) in job 'pad_Job' raised MemoryError: simulated"):
        job(X)
    assert flow.default_session().status.value == "RUNNING"
    still_works(job)
