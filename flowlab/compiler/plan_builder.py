"""Compile every job into one Plan: a task per op, registers between them, memory, and the main job.

Follows OneFlow's CompileAndMergePlanOnMaster: per-job tasks and registers (data ``out``, control
``out_ctrl``), ordering control edges along each job's compute chain, interface memory shared across jobs,
one critical section per job, then the main job (WaitAndSendIds -> ReentrantLock -> Case -> one Tick per
critical section -> Esac -> CallbackNotify) linked in place of each job's source tick (LinkMainPlan).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import INTERFACE_OP_TYPES, BlobDesc, CriticalSection, Job, OpConf, Plan, RegstDesc, TaskProto
from ..ir.plan import encode_task_id
from .interfaces import check_interfaces
from .memory import RegstMem, align, plan_memory
from .passes import SINK_TICK, SOURCE_TICK
from .system_jobs import SystemJobBuilder

TASK_TYPES = {
    "foreign_input": "ForeignInput",
    "foreign_output": "ForeignOutput",
    "sink_tick": "Tick",
    "wait_and_send_ids": "WaitAndSendIds",
    "reentrant_lock": "ReentrantLock",
    "case": "Case",
    "tick": "Tick",
    "esac": "Esac",
    "callback_notify": "CallbackNotify",
}  # every other op runs in a NormalForward task
REGISTER_NUM = {"WaitAndSendIds": 100}  # OneFlow's min_register_num for the wait-ids source
WAIT_BUFFER = "GlobalWaitJobId"
CALLBACK_BUFFER = "CallbackNotifier"
MAIN_JOB = "System-Main"


@dataclass
class _Regst:
    regst_desc_id: int
    producer: int
    regst_type: str
    register_num: int = 1
    consumers: list[int] = field(default_factory=list)
    blobs: dict[str, BlobDesc] = field(default_factory=dict)


@dataclass
class _Task:
    job_id: int
    op: OpConf
    task_type: str
    thrd_id: int
    task_id: int
    order: int
    chain_id: int
    produced: dict[str, _Regst] = field(default_factory=dict)
    consumed: dict[str, list[int]] = field(default_factory=dict)

    def consume(self, name: str, regst: _Regst) -> None:
        ids = self.consumed.setdefault(name, [])
        if regst.regst_desc_id not in ids:
            ids.append(regst.regst_desc_id)
            regst.consumers.append(self.task_id)


class _PlanBuilder:
    def __init__(self, cpu_device_num: int) -> None:
        self.cpu_device_num = cpu_device_num
        self.tasks: list[_Task] = []
        self.by_op: dict[tuple[int, str], _Task] = {}
        self.regsts: list[_Regst] = []
        self.thread_index: dict[int, int] = {}
        self.next_dedicated_thrd = cpu_device_num + 2  # after the device threads, CommNet and TickTock
        self.chains: dict[int, list[_Task]] = {}  # job_id -> compute chain in order

    # -- tasks -------------------------------------------------------------------------------------
    def add_tasks(self, job_id: int, job: Job) -> None:
        chain = self.chains.setdefault(job_id, [])
        for op in job.ops:
            if op.op_type == "source_tick":
                continue  # replaced by the main job's critical-section tick (LinkMainPlan)
            task_type = TASK_TYPES.get(op.op_type, "NormalForward")
            if task_type == "NormalForward":
                thrd_id = op.parallel_conf.devices[0][1]
            else:  # independent tasks get a thread of their own
                thrd_id, self.next_dedicated_thrd = self.next_dedicated_thrd, self.next_dedicated_thrd + 1
            index = self.thread_index.get(thrd_id, 0)
            self.thread_index[thrd_id] = index + 1
            task = _Task(job_id, op, task_type, thrd_id, encode_task_id(0, thrd_id, index), len(self.tasks),
                         chain_id=len(self.tasks))
            if task_type == "NormalForward":
                task.chain_id = chain[0].chain_id if chain else task.chain_id
                chain.append(task)
            self.tasks.append(task)
            self.by_op[(job_id, op.name)] = task

    def regst(self, task: _Task, name: str, regst_type: str) -> _Regst:
        if name not in task.produced:
            regst = _Regst(len(self.regsts), task.task_id, regst_type, REGISTER_NUM.get(task.task_type, 1))
            self.regsts.append(regst)
            task.produced[name] = regst
        return task.produced[name]

    # -- edges -------------------------------------------------------------------------------------
    def connect(self, job_id: int, job: Job) -> None:
        for op in job.ops:
            task = self.by_op.get((job_id, op.name))
            if task is None:
                continue
            for lbn in op.output_lbns:
                self.regst(task, _regst_name(task, lbn), "data").blobs[lbn] = job.blob_descs[lbn]
            for arg, lbns in op.inputs.items():
                for lbn in lbns:
                    producer = self.by_op[(job_id, lbn.rpartition("/")[0])]
                    regst = self.regst(producer, _regst_name(producer, lbn), "data")
                    task.consume(arg if task.task_type == "ReentrantLock" else "in", regst)
            for name in op.ctrl_in_op_names:
                if name != SOURCE_TICK:
                    task.consume("in_ctrl", self.regst(self.by_op[(job_id, name)], "out_ctrl", "ctrl"))
        chain = self.chains.get(job_id, [])
        for a, b in zip(chain, chain[1:]):  # fix the chain's order; memory reuse relies on it
            if not any(r.regst_desc_id in ids for r in a.produced.values() for ids in b.consumed.values()):
                b.consume("in_ctrl", self.regst(a, "out_ctrl", "ctrl"))

    def link_main(self, main_id: int, jobs: list[Job]) -> None:
        esac = next(t for t in self.tasks if t.job_id == main_id and t.task_type == "Esac")
        for job_id, job in enumerate(jobs):
            tick = self.by_op[(main_id, f"System-Main-Tick_CriticalSection_{job_id}")]
            for op in job.ops:
                if SOURCE_TICK in op.ctrl_in_op_names:
                    self.by_op[(job_id, op.name)].consume("in_ctrl", self.regst(tick, "out_ctrl", "ctrl"))
            esac.consume("in", self.regst(self.by_op[(job_id, SINK_TICK)], "out_ctrl", "ctrl"))
        lock = next(t for t in self.tasks if t.job_id == main_id and t.task_type == "ReentrantLock")
        lock.consume("end", esac.produced["out"])  # ConnectCriticalSectionEndToReentrantLockEnd


def _regst_name(task: _Task, lbn: str) -> str:
    """A Case task has one register per branch (``out_<i>``); every other task puts its outputs in ``out``."""
    return lbn.rpartition("/")[2] if task.task_type == "Case" else "out"


def make_main_job(jobs: list[Job]) -> Job:
    interfaces = [set(job.interface_op_names) for job in jobs]
    intersecting = tuple(
        tuple(j for j in range(len(jobs)) if j != i and interfaces[i] & interfaces[j]) for i in range(len(jobs))
    )
    b = SystemJobBuilder(MAIN_JOB, "main")
    wait = b.add("wait_and_send_ids", "System-Main-WaitAndSendIds_0",
                 attrs={"wait_buffer_name": WAIT_BUFFER, "id_list": tuple((i,) for i in range(len(jobs)))})
    lock = b.add("reentrant_lock", "System-Main-ReentrantLock_0", {"start": (wait,)},
                 {"lock_id2intersecting_lock_ids": intersecting})
    b.add("case", "System-Main-Case_0", {"in": (lock,)}, {"num_branches": len(jobs)})
    for i, lbn in enumerate(b.ops[-1].outputs["out"]):
        b.add("tick", f"System-Main-Tick_CriticalSection_{i}", {"in": (lbn,)}, {"critical_section_id": i})
    esac = b.add("esac", "System-Main-Esac_0")
    b.add("callback_notify", "System-Main-CallbackNotify_0", {"in": (esac,)}, {"callback_buffer_name": CALLBACK_BUFFER})
    return b.build()


def build_plan(jobs: list[Job], cpu_device_num: int = 1) -> tuple[Job, Plan]:
    """Compile the (completed) jobs, in job_id order, and the main job made for them, into one Plan."""
    check_interfaces(jobs)
    main = make_main_job(jobs)
    main_id = len(jobs)
    all_jobs = [*jobs, main]
    pb = _PlanBuilder(cpu_device_num)
    for job_id, job in enumerate(all_jobs):
        pb.add_tasks(job_id, job)
    for job_id, job in enumerate(all_jobs):
        pb.connect(job_id, job)
    pb.link_main(main_id, jobs)
    return main, _assemble(pb, all_jobs)


def _assemble(pb: _PlanBuilder, jobs: list[Job]) -> Plan:
    task_of = {t.task_id: t for t in pb.tasks}
    chain_pos = {t.task_id: i for chain in pb.chains.values() for i, t in enumerate(chain)}
    layouts: dict[int, tuple[dict[str, int], int]] = {}
    mems: dict[int, RegstMem] = {}
    for regst in pb.regsts:
        if regst.regst_type != "data":
            continue
        offsets, size = {}, 0
        for lbn, desc in regst.blobs.items():
            offsets[lbn], size = size, size + align(desc.nbytes)
        layouts[regst.regst_desc_id] = (offsets, size)
        producer = task_of[regst.producer]
        job = jobs[producer.job_id]
        interface = producer.op.name if producer.op.op_type in INTERFACE_OP_TYPES else None
        lifetime = None
        in_chain = regst.producer in chain_pos and all(c in chain_pos for c in regst.consumers)
        if interface is None and in_chain and job.job_conf.get("enable_reuse_mem", True):
            positions = [chain_pos[regst.producer], *(chain_pos[c] for c in regst.consumers)]
            lifetime = (min(positions), max(positions))
        mems[regst.regst_desc_id] = RegstMem(regst.regst_desc_id, producer.job_id, size * regst.register_num,
                                             interface, lifetime)
    blocks = plan_memory(list(mems.values()))
    tasks = []
    for t in pb.tasks:
        produced = {}
        for name, r in t.produced.items():
            mem = mems.get(r.regst_desc_id)
            offsets, size = layouts.get(r.regst_desc_id, ({}, 0))
            produced[name] = RegstDesc(
                r.regst_desc_id, r.producer, tuple(r.consumers), r.register_num, r.regst_type, dict(r.blobs), offsets,
                "host", mem.enable_reuse_mem if mem else False, mem.mem_block_id if mem else -1,
                mem.mem_block_offset if mem else 0, size,
            )
        tasks.append(TaskProto(t.task_type, 0, t.thrd_id, t.task_id, t.job_id, t.chain_id, t.order, (t.op,), produced,
                               {k: tuple(v) for k, v in t.consumed.items()}))
    sections = []
    for job_id in range(len(jobs) - 1):
        block_ids = sorted({mems[r.regst_desc_id].mem_block_id for t in pb.tasks if t.job_id == job_id
                            for r in t.produced.values() if r.regst_desc_id in mems})
        sections.append(CriticalSection(job_id, job_id, "total_job", tuple(block_ids)))
    return Plan(
        tasks=tuple(tasks),
        mem_blocks=tuple(blocks),
        job_names=tuple(j.name for j in jobs),
        job_kinds=tuple(j.kind for j in jobs),
        critical_sections=tuple(sections),
        job_id2critical_section_ids={i: (i,) for i in range(len(jobs) - 1)},
    )
