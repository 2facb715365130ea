"""Plain data: dtypes, blob descs, op confs, jobs, job sets and plans, with printers and JSON."""

from .blob import BlobDesc, split_lbn
from .dtype import DType
from .frozen import FrozenDict
from .job import INTERFACE_OP_TYPES, Job, JobSet
from .op_conf import OpConf, ParallelConf
from .plan import CriticalSection, MemBlock, Plan, RegstDesc, TaskProto, decode_task_id, encode_task_id
from .serialize import from_json, to_json

__all__ = [
    "BlobDesc", "CriticalSection", "DType", "FrozenDict", "INTERFACE_OP_TYPES", "Job", "JobSet", "MemBlock", "OpConf",
    "ParallelConf", "Plan", "RegstDesc", "TaskProto", "decode_task_id", "encode_task_id", "from_json",
    "split_lbn", "to_json",
]
