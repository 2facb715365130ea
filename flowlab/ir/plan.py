"""The Plan: tasks (one actor each), register descs and memory blocks, with OneFlow's field names."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .blob import BlobDesc
from .frozen import FrozenDict, derived
from .op_conf import OpConf
from .sbp import SbpSignature

# Task types that move or combine data between devices and machines rather than run a job's op: the boxing
# sub-graphs (OneFlow's kSliceBoxing, kBoxingZeros) and the copy across machines (kCopyCommNet).
BOXING_TASK_TYPES = frozenset({"SliceBoxing", "BoxingZeros", "CopyCommNet", "CopyHd"})
# Tasks running an op's kernel on a compute thread: OneFlow's distribute ops have their own task types (kDistribute*,
# a DistributeSplit/DistributeConcat logical node) and a NormalForwardCompActor, as here.
COMPUTE_TASK_TYPES = frozenset({"NormalForward", "DistributeSplit", "DistributeConcat"})

# Actor id bits as in OneFlow's IdManager: sign | machine 10 | thread 11 | work stream 21 | index 21.
_MACHINE_SHIFT, _THRD_SHIFT, _STREAM_SHIFT = 53, 42, 21


def encode_task_id(machine_id: int, thrd_id: int, index: int, stream_id: int = 0) -> int:
    return (machine_id << _MACHINE_SHIFT) | (thrd_id << _THRD_SHIFT) | (stream_id << _STREAM_SHIFT) | index


def decode_task_id(task_id: int) -> tuple[int, int, int, int]:
    """-> (machine_id, thrd_id, stream_id, index)"""
    mask21 = (1 << 21) - 1
    return (
        task_id >> _MACHINE_SHIFT,
        (task_id >> _THRD_SHIFT) & ((1 << 11) - 1),
        (task_id >> _STREAM_SHIFT) & mask21,
        task_id & mask21,
    )


def short_task_id(task_id: int) -> str:
    machine, thrd, _stream, index = decode_task_id(task_id)
    return f"{machine}:{thrd}:{index}"


@dataclass(frozen=True)
class MemBlock:
    mem_block_id: int
    job_ids: tuple[int, ...]
    machine_id: int
    mem_case: str  # "host" | "device_cuda:<id>"
    enable_reuse_mem: bool
    mem_size: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "job_ids", tuple(self.job_ids))

    def __str__(self) -> str:
        jobs = ",".join(map(str, self.job_ids))
        kind = "reused" if self.enable_reuse_mem else "fixed"
        return f"block {self.mem_block_id}: {self.mem_size} B {self.mem_case} jobs=[{jobs}] {kind}"


@dataclass(frozen=True)
class RegstDesc:
    regst_desc_id: int
    producer_task_id: int
    consumer_task_ids: tuple[int, ...]
    register_num: int
    regst_desc_type: str  # "data" | "ctrl"
    lbi2blob_desc: Mapping[str, BlobDesc] = field(default_factory=FrozenDict)
    blob_offsets: Mapping[str, int] = field(default_factory=FrozenDict)  # lbn -> byte offset inside one register
    mem_case: str = "host"
    enable_reuse_mem: bool = False
    mem_block_id: int = -1
    mem_block_offset: int = 0
    regst_size: int = 0  # bytes of one register (aligned); the block holds register_num of them
    # OneFlow's in-place fields (register_desc.proto): the task graph asks that this register be the memory of a
    # register its producer consumes (force: a variable's ref, compiler/inplace.py); the Plan grants it by giving
    # it that register's block and offset (SetForceInplaceMemBlock) and says so in inplace_consumed_regst_desc_id,
    # which the runtime acts on (its producer copies nothing). -1: none.
    force_inplace_consumed_regst_desc_id: int = -1
    inplace_consumed_regst_desc_id: int = -1
    # flowlab's piece grant (compiler/gather_inplace.py; OneFlow has no such field): a register its producer
    # consumes lies inside this one, ``piece_inplace_offset`` bytes from its start (a device's own rows of an
    # all-gathered S(0) variable are the variable's memory, so the gather copies only the other devices' rows)
    piece_inplace_consumed_regst_desc_id: int = -1
    piece_inplace_offset: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "consumer_task_ids", tuple(self.consumer_task_ids))
        object.__setattr__(self, "lbi2blob_desc", FrozenDict(self.lbi2blob_desc))
        object.__setattr__(self, "blob_offsets", FrozenDict(self.blob_offsets))

    @property
    def is_ctrl(self) -> bool:
        return self.regst_desc_type == "ctrl"

    def __str__(self) -> str:
        if self.is_ctrl:
            return f"r{self.regst_desc_id}:ctrl x{self.register_num}"
        blobs = ", ".join(f"{lbn}:{desc}" for lbn, desc in self.lbi2blob_desc.items())
        where = f"@blk{self.mem_block_id}+{self.mem_block_offset}" if self.mem_block_id >= 0 else ""
        if self.mem_case != "host":  # host is the default; device and pinned memory are worth a look
            where += f" {self.mem_case}"
        if self.force_inplace_consumed_regst_desc_id >= 0:
            where += f" force_inplace_consumed=r{self.force_inplace_consumed_regst_desc_id}"
        if self.inplace_consumed_regst_desc_id >= 0:  # granted: the same bytes as that register
            where += f" inplace_consumed=r{self.inplace_consumed_regst_desc_id}"
        if self.piece_inplace_consumed_regst_desc_id >= 0:  # that register's bytes are a piece of this one
            where += f" piece_inplace_consumed=r{self.piece_inplace_consumed_regst_desc_id}+{self.piece_inplace_offset}"
        return f"r{self.regst_desc_id}({blobs}) x{self.register_num} {where}".rstrip()


@dataclass(frozen=True)
class TaskProto:
    task_type: str  # NormalForward | Tick | Case | Esac | ReentrantLock | WaitAndSendIds | CallbackNotify | ...
    machine_id: int
    thrd_id: int
    task_id: int
    job_id: int
    chain_id: int
    order_in_graph: int
    exec_sequence: tuple[OpConf, ...]  # the ops this task runs, in order (one for every task flowlab builds)
    produced_regst_desc: Mapping[str, RegstDesc]  # name ("out", "out_ctrl", ...) -> desc
    consumed_regst_desc_id: Mapping[str, tuple[int, ...]]  # name ("in", "in_ctrl", "start", ...) -> ids
    parallel_id: int = 0  # OneFlow's parallel_ctx: which device of the op's placement this task runs on
    parallel_num: int = 1
    # the SBP signature its op runs under (OneFlow keeps it in the kernel conf's op_attribute); None on one device
    sbp_signature: SbpSignature | None = None
    # per input of its op (exec_sequence[0].input_lbns' order): the consumed register it reads, so a blob read as
    # two arguments in two SBPs binds each argument to its own register; () where the plan builder recorded none
    input_regst_ids: tuple[int, ...] = ()
    # its op is a system op (ops/system.py: interface, variable, tick, model I/O, boxing ops): the runtime binds a
    # system kernel, and its thread is no compute thread. The plan builder asks the op registry once, here, so the
    # runtime never does
    system_op: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "exec_sequence", tuple(self.exec_sequence))
        object.__setattr__(self, "input_regst_ids", tuple(self.input_regst_ids))
        object.__setattr__(self, "produced_regst_desc", FrozenDict(self.produced_regst_desc))
        object.__setattr__(self, "consumed_regst_desc_id",
                           FrozenDict({k: tuple(v) for k, v in self.consumed_regst_desc_id.items()}))

    @property
    def name(self) -> str:
        return self.exec_sequence[0].name if self.exec_sequence else f"task{self.task_id}"

    @property
    def op_types(self) -> tuple[str, ...]:
        return tuple(op.op_type for op in self.exec_sequence)

    @property
    def is_boxing(self) -> bool:
        """A task the plan builder inserted to move data between devices or machines (``System-Boxing-*``,
        ``CopyCommNet``), not one of a job's ops."""
        return self.task_type in BOXING_TASK_TYPES

    @property
    def gpu_device(self) -> int | None:
        """The GPU whose streams run this task (a GPU compute task or a CopyHd), or None for a host task."""
        op = self.exec_sequence[0] if self.exec_sequence else None
        if op is None or op.parallel_conf.device_tag != "gpu" or (self.task_type not in COMPUTE_TASK_TYPES
                                                                  and self.task_type != "CopyHd"):
            return None
        devices = op.parallel_conf.devices
        return devices[self.parallel_id if self.parallel_id < len(devices) else 0][1]

    @property
    def consumed_ids(self) -> tuple[int, ...]:
        return tuple(i for ids in self.consumed_regst_desc_id.values() for i in ids)

    def __str__(self) -> str:
        consumed = " ".join(
            f"{name}=[{','.join(f'r{i}' for i in ids)}]" for name, ids in self.consumed_regst_desc_id.items()
        )
        produced = " ".join(f"{name}={regst}" for name, regst in self.produced_regst_desc.items())
        head = f"task {short_task_id(self.task_id)} {self.task_type} {self.name}"
        if self.task_type == "CopyHd":
            head += f" ({self.exec_sequence[0].attrs['type']})"
        if self.parallel_num > 1:
            head += f" [{self.parallel_id}/{self.parallel_num}]"
        if self.sbp_signature is not None:
            head += f" {self.sbp_signature}"
        parts = [head]
        if consumed:
            parts.append(f"consumes {consumed}")
        if produced:
            parts.append(f"produces {produced}")
        return " | ".join(parts)


@dataclass(frozen=True)
class CriticalSection:
    """A span of one job that the reentrant lock grants as a unit; two intersect iff they share a block."""

    critical_section_id: int
    job_id: int
    kind: str  # "total_job" (flowlab builds one per job; see compiler/main_job.py)
    mem_block_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "mem_block_ids", tuple(self.mem_block_ids))

    def intersects(self, other: CriticalSection) -> bool:
        return bool(set(self.mem_block_ids) & set(other.mem_block_ids))


@dataclass(frozen=True)
class Plan:
    tasks: tuple[TaskProto, ...]
    mem_blocks: tuple[MemBlock, ...]
    job_names: tuple[str, ...]  # job_id -> name (OneFlow's job_confs)
    job_kinds: tuple[str, ...]
    critical_sections: tuple[CriticalSection, ...]
    job_id2critical_section_ids: Mapping[int, tuple[int, ...]]  # the main job's WaitAndSendIds id_list

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "mem_blocks", tuple(self.mem_blocks))
        object.__setattr__(self, "job_names", tuple(self.job_names))
        object.__setattr__(self, "job_kinds", tuple(self.job_kinds))
        object.__setattr__(self, "critical_sections", tuple(self.critical_sections))
        object.__setattr__(self, "job_id2critical_section_ids",
                           FrozenDict({k: tuple(v) for k, v in self.job_id2critical_section_ids.items()}))

    def __iter__(self) -> Iterator[TaskProto]:
        return iter(self.tasks)

    # Views derived from the fields, computed once (ir/frozen.py, ``derived``): the runtime, the verifier and the
    # replay layer look tasks and registers up by id for every task, so a view rebuilt per lookup is quadratic.
    @derived
    def regst_descs(self) -> FrozenDict[int, RegstDesc]:
        return FrozenDict({r.regst_desc_id: r for t in self.tasks for r in t.produced_regst_desc.values()})

    @derived
    def _task_index(self) -> FrozenDict[int | str, TaskProto]:
        """task_id -> task, and name -> the first task of that name (a name runs one task per device)."""
        index: dict[int | str, TaskProto] = {}
        for task in self.tasks:
            index.setdefault(task.task_id, task)
            index.setdefault(task.name, task)
        return FrozenDict(index)

    @derived
    def _tasks_by_job(self) -> FrozenDict[int, tuple[TaskProto, ...]]:
        groups: dict[int, list[TaskProto]] = {}
        for task in self.tasks:
            groups.setdefault(task.job_id, []).append(task)
        return FrozenDict({job_id: tuple(tasks) for job_id, tasks in groups.items()})

    def task(self, key: int | str) -> TaskProto:
        task = self._task_index.get(key)
        if task is None:
            raise KeyError(f"plan has no task {key!r}")
        return task

    def tasks_of_job(self, job: int | str) -> tuple[TaskProto, ...]:
        job_id = self.job_names.index(job) if isinstance(job, str) else job
        return self._tasks_by_job.get(job_id, ())

    def tasks_of_op(self, job: int | str, op_name: str) -> tuple[TaskProto, ...]:
        """The tasks running one op of a job, one per device of its placement, in parallel_id order."""
        tasks = [t for t in self.tasks_of_job(job) if t.name == op_name and not t.is_boxing]
        return tuple(sorted(tasks, key=lambda t: t.parallel_id))

    @derived
    def peer_machine_ids(self) -> FrozenDict[int, tuple[int, ...]]:
        """OneFlow's net_topo: machine -> the other machines it exchanges registers with."""
        regsts = self.regst_descs
        machine_of = {t.task_id: t.machine_id for t in self.tasks}
        peers: dict[int, set[int]] = {}
        for t in self.tasks:
            for rid in t.consumed_ids:
                a, b = machine_of[regsts[rid].producer_task_id], t.machine_id
                if a != b:
                    peers.setdefault(a, set()).add(b)
                    peers.setdefault(b, set()).add(a)
        return FrozenDict({m: tuple(sorted(p)) for m, p in sorted(peers.items())})

    @derived
    def _mem_block_index(self) -> FrozenDict[int, MemBlock]:
        return FrozenDict({b.mem_block_id: b for b in reversed(self.mem_blocks)})  # the first of an id wins

    def mem_block(self, mem_block_id: int) -> MemBlock:
        return self._mem_block_index[mem_block_id]

    def __str__(self) -> str:
        n_regst = len(self.regst_descs)
        lines = [f"plan: {len(self.tasks)} tasks, {n_regst} regsts, {len(self.mem_blocks)} mem blocks"]
        for job_id, name in enumerate(self.job_names):
            lines.append(f"job {job_id} {name} ({self.job_kinds[job_id]}):")
            lines.extend(f"  {t}" for t in self.tasks_of_job(job_id))
        lines.append("mem blocks:")
        lines.extend(f"  {b}" for b in self.mem_blocks)
        lines.append("critical sections:")
        for cs in self.critical_sections:
            blocks = ",".join(map(str, cs.mem_block_ids))
            lines.append(f"  cs {cs.critical_section_id}: job {cs.job_id} {cs.kind} blocks=[{blocks}]")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Plan tasks={len(self.tasks)} mem_blocks={len(self.mem_blocks)} jobs={list(self.job_names)}>"
