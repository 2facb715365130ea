"""Versioned JSON for every IR object (Job, JobSet, Plan and what they hold).

The form is tagged and complete, so a saved plan can be reloaded, diffed or rendered later (the JupyterLab mime
renderer reads it). Sequences are stored as lists and read back as tuples, the IR's sequence type.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from . import blob, dtype, job, op_conf, plan, sbp

FORMAT_VERSION = 1
_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        blob.BlobDesc,
        op_conf.ParallelConf,
        op_conf.OpConf,
        job.Job,
        job.JobSet,
        plan.MemBlock,
        plan.RegstDesc,
        plan.TaskProto,
        plan.CriticalSection,
        plan.Plan,
        sbp.SbpParallel,
        sbp.SbpSignature,
    )
}


def register(*classes: type) -> None:
    """Make more IR dataclasses readable back (ir/schedule.py's, which imports this module)."""
    _TYPES.update({cls.__name__: cls for cls in classes})


def _encode(value: Any) -> Any:
    if isinstance(value, dtype.DType):
        return {"__dtype__": value.name}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"__type__": type(value).__name__, **fields}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return {"__dict__": {k: _encode(v) for k, v in value.items()}}
        return {"__items__": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    if not isinstance(value, dict):
        return value
    if "__dtype__" in value:
        return dtype.by_name(value["__dtype__"])
    if "__dict__" in value:
        return {k: _decode(v) for k, v in value["__dict__"].items()}
    if "__items__" in value:
        return {_decode(k): _decode(v) for k, v in value["__items__"]}
    type_name = value["__type__"]
    cls = _TYPES.get(type_name)
    if cls is None:
        raise ValueError(f"unknown IR type {type_name!r} in flowlab JSON; known: {sorted(_TYPES)}")
    return cls(**{k: _decode(v) for k, v in value.items() if k != "__type__"})


def to_json(obj: Any, indent: int | None = None) -> str:
    return json.dumps({"flowlab_json": FORMAT_VERSION, "value": _encode(obj)}, indent=indent)


def from_json(text: str) -> Any:
    doc = json.loads(text)
    version = doc.get("flowlab_json") if isinstance(doc, dict) else None
    if version != FORMAT_VERSION:
        raise ValueError(f"not flowlab JSON of version {FORMAT_VERSION} (found version {version!r})")
    return _decode(doc["value"])
