"""OneFlow v0.3.4's ``flow.config`` settings flowlab accepts without acting on them (each checks its value's type
as ``config_util.py`` asserts it, keeps it and warns once), ``flow.env.log_dir`` (where debug mode writes), and
the ``flowlab.core`` enum modules a model script imports (numbers from OneFlow's data_type.proto and
op_conf.proto)."""

from __future__ import annotations

import socket
import warnings
from pathlib import Path

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab import config as config_module

# (setting, a value of its type, a value of the wrong type), from config_util.py's asserts
CASES = [
    ("machine_num", 1, True),
    ("enable_tensor_float_32_compute", False, 1),
    ("enable_legacy_model_io", True, "yes"),
    ("enable_model_io_v2", True, 1),
    ("collective_boxing.nccl_enable_all_to_all", True, 1),
    ("collective_boxing.nccl_fusion_threshold_mb", 32, 1.5),
    ("collective_boxing.enable_fusion", False, None),
    ("collective_boxing.nccl_fusion_max_ops", 8, False),
    ("compute_thread_pool_size", 4, 4.0),
    ("load_library", "libx.so", 3),
]


def _setter(name: str):
    node = flow.config
    for part in name.split("."):
        node = getattr(node, part)
    return node


@pytest.mark.parametrize(("name", "good", "bad"), CASES)
def test_a_no_op_setting_checks_its_type_keeps_its_value_and_warns_once(name, good, bad):
    config_module._warned.discard(name)
    with pytest.warns(UserWarning, match=f"flow.config.{name} but does not act on it"):
        _setter(name)(good)
    assert flow.config.value(name) == good
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once is enough
        _setter(name)(good)
    if bad is None:  # a bool setting whose value defaults to True (OneFlow's val=True)
        _setter(name)()
        assert flow.config.value(name) is True
        return
    with pytest.raises(TypeError, match=f"flow.config.{name} takes a"):
        _setter(name)(bad)


def test_defaults_are_oneflows_and_the_legacy_switch_reads_back():
    assert flow.config.value("collective_boxing.nccl_fusion_threshold_mb") == 16  # resource.proto
    assert flow.config.value("enable_tensor_float_32_compute") is True
    assert flow.config.legacy_model_io_enabled() is False  # job_set.proto
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flow.config.enable_legacy_model_io()
    assert flow.config.legacy_model_io_enabled() is True


def test_unknown_settings_suggest_the_close_ones():
    with pytest.raises(AttributeError, match="did you mean collective_boxing.nccl_enable_all_to_all"):
        flow.config.collective_boxing.nccl_enable_all_to_al(True)
    with pytest.raises(AttributeError, match="did you mean enable_model_io_v2"):
        flow.config.enable_model_io_v3(True)
    with pytest.raises(TypeError, match="got no value"):
        flow.config.machine_num()


def test_every_setting_is_documented():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "oneflow-api.md").read_text()
    missing = [name for name in flow.config.SETTINGS if f"`{name}`" not in doc]
    assert not missing, f"docs/oneflow-api.md does not list {missing}"


def test_env_log_dir_is_where_debug_mode_writes(tmp_path):
    flow.env.log_dir(str(tmp_path / "logs"))
    flow.config.enable_debug_mode(True)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x + 1.0

    np.testing.assert_array_equal(job(np.zeros(2, np.float32)), np.ones(2, np.float32))
    assert (tmp_path / "logs" / socket.gethostname() / "job_set.txt").is_file()
    with pytest.raises(TypeError, match="log_dir takes a directory path string"):
        flow.env.log_dir(3)


def test_core_enum_modules_have_oneflows_numbers():
    import flowlab.core.common.data_type_pb2 as data_type_util
    import flowlab.core.operator.op_conf_pb2 as op_conf_util

    # oneflow/core/common/data_type.proto and oneflow/core/operator/op_conf.proto at v0.3.4
    assert (data_type_util.kInvalidDataType, data_type_util.kChar, data_type_util.kFloat, data_type_util.kDouble,
            data_type_util.kInt8, data_type_util.kInt32, data_type_util.kInt64, data_type_util.kUInt8,
            data_type_util.kOFRecord, data_type_util.kFloat16, data_type_util.kTensorBuffer) == tuple(range(11))
    assert (op_conf_util.kNone, op_conf_util.kTanH, op_conf_util.kSigmoid, op_conf_util.kRelu) == (0, 1, 2, 3)
    assert data_type_util.DataType.Name(5) == "kInt32" and data_type_util.DataType.Value("kDouble") == 3
    assert op_conf_util.ActivationType.keys() == ["kNone", "kTanH", "kSigmoid", "kRelu"]
    with pytest.raises(ValueError, match="no value named"):
        op_conf_util.ActivationType.Value("kGelu")
    for dtype in (flow.char, flow.float32, flow.float64, flow.int8, flow.int32, flow.int64, flow.uint8,
                  flow.float16):  # flowlab's dtypes carry the same numbers (OneFlow's oneflow_proto_dtype)
        assert dtype.oneflow_proto_dtype == data_type_util.DataType.Value(dtype.proto_name)
    assert flow.core.operator.op_conf_pb2 is op_conf_util  # reached as attributes too
