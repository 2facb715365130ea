"""Data types, named as OneFlow names them (``flow.float32``; proto enum ``kFloat``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str  # "float32"
    short: str  # "f32", used when printing blob descs
    np_name: str  # numpy's name for it
    proto_name: str  # OneFlow's data_type.proto enum name, used in checkpoint meta files
    proto_id: int

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.np_name)

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    @property
    def is_floating(self) -> bool:
        return self.np.kind == "f"

    @property
    def oneflow_proto_dtype(self) -> int:
        """OneFlow's DataType enum value (``data_type_pb2.kFloat`` is 2)."""
        return self.proto_id

    def __repr__(self) -> str:
        return f"flow.{self.name}"


char = DType("char", "i8c", "int8", "kChar", 1)
float32 = DType("float32", "f32", "float32", "kFloat", 2)
float64 = DType("float64", "f64", "float64", "kDouble", 3)
int8 = DType("int8", "i8", "int8", "kInt8", 4)
int32 = DType("int32", "i32", "int32", "kInt32", 5)
int64 = DType("int64", "i64", "int64", "kInt64", 6)
uint8 = DType("uint8", "u8", "uint8", "kUInt8", 7)
float16 = DType("float16", "f16", "float16", "kFloat16", 9)

ALL: tuple[DType, ...] = (char, float32, float64, int8, int32, int64, uint8, float16)
_BY_NAME = {d.name: d for d in ALL} | {"float": float32, "double": float64, "half": float16}
_BY_PROTO = {d.proto_name: d for d in ALL}
# numpy -> flowlab; int8 maps to int8 (not char), as OneFlow's numpy conversion does.
_BY_NP = {np.dtype(d.np_name): d for d in ALL if d is not char}


def by_name(name: str) -> DType:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; expected one of {sorted(_BY_NAME)}") from None


def by_proto_name(name: str) -> DType:
    try:
        return _BY_PROTO[name]
    except KeyError:
        raise ValueError(f"unknown OneFlow data_type {name!r}; expected one of {sorted(_BY_PROTO)}") from None


def from_numpy(dt: np.dtype | type) -> DType:
    try:
        return _BY_NP[np.dtype(dt)]
    except KeyError:
        raise TypeError(f"numpy dtype {np.dtype(dt)} has no flowlab dtype") from None


def as_dtype(value: object) -> DType:
    """Accept a DType, a dtype name or a numpy dtype."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        return by_name(value)
    return from_numpy(value)  # type: ignore[arg-type]


def convert_oneflow_dtype_to_numpy_dtype(oneflow_dtype: DType) -> type:
    """OneFlow's ``flow.convert_oneflow_dtype_to_numpy_dtype(flow.float)``: the NumPy scalar type (``np.float32``;
    ``flow.char`` is ``np.byte``)."""
    if not isinstance(oneflow_dtype, DType):
        raise NotImplementedError(f"convert_oneflow_dtype_to_numpy_dtype takes a flowlab dtype (flow.float32, "
                                  f"flow.int32, ...); got {oneflow_dtype!r}")
    return oneflow_dtype.np.type
