"""OneFlow's ``oneflow/core/common/data_type.proto`` enum ``DataType`` (v0.3.4), with its numbers: what a model
script reads as ``data_type_util.kFloat``. ``flow.float32.oneflow_proto_dtype`` is the same number."""

from .._enum import ProtoEnum

kInvalidDataType = 0
kChar = 1
kFloat = 2
kDouble = 3
kInt8 = 4
kInt32 = 5
kInt64 = 6
kUInt8 = 7
kOFRecord = 8
kFloat16 = 9
kTensorBuffer = 10

DataType = ProtoEnum("DataType", {
    "kInvalidDataType": kInvalidDataType, "kChar": kChar, "kFloat": kFloat, "kDouble": kDouble, "kInt8": kInt8,
    "kInt32": kInt32, "kInt64": kInt64, "kUInt8": kUInt8, "kOFRecord": kOFRecord, "kFloat16": kFloat16,
    "kTensorBuffer": kTensorBuffer,
})

__all__ = ["DataType", "kChar", "kDouble", "kFloat", "kFloat16", "kInt32", "kInt64", "kInt8", "kInvalidDataType",
           "kOFRecord", "kTensorBuffer", "kUInt8"]
