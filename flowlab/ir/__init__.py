"""Plain data: dtypes, blob descs, op confs, jobs, job sets and plans, with printers and JSON."""

from .blob import BlobDesc, split_lbn
from .dtype import DType
from .frozen import FrozenDict
from .job import INTERFACE_OP_TYPES, Job, JobSet
from .op_conf import OpConf, ParallelConf
from .plan import (
    COMPUTE_TASK_TYPES,
    CriticalSection,
    MemBlock,
    Plan,
    RegstDesc,
    TaskProto,
    decode_task_id,
    encode_task_id,
)
from .sbp import BROADCAST, PARTIAL_SUM, SbpParallel, SbpSignature, balanced_split, parse_sbp, split
from .schedule import Schedule, ScheduleDelta, ScheduleError, ScheduleStep, check_schedule
from .serialize import from_json, to_json

__all__ = [
    "COMPUTE_TASK_TYPES",
    "BlobDesc", "CriticalSection", "DType", "FrozenDict", "INTERFACE_OP_TYPES", "Job", "JobSet", "MemBlock", "OpConf",
    "BROADCAST", "PARTIAL_SUM", "ParallelConf", "Plan", "RegstDesc", "SbpParallel", "SbpSignature", "TaskProto",
    "Schedule", "ScheduleDelta", "ScheduleError", "ScheduleStep",
    "balanced_split", "check_schedule", "decode_task_id", "encode_task_id", "from_json", "parse_sbp", "split",
    "split_lbn", "to_json",
]
