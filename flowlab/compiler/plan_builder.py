"""Compile every job into one Plan: a task per op and device, boxing between devices and machines, registers,
memory, and the main job.

Follows OneFlow's CompileAndMergePlanOnMaster: per-job tasks (one per device of the op's placement, with its
parallel_ctx) and registers (data ``out`` holding physical blobs, control ``out_ctrl``), boxing sub-graphs where
SBP or placement disagree (boxing.py), ordering control edges along each job's compute chain on each device,
interface memory shared across jobs device by device, one critical section per job, then the main job
(main_job.py) linked in place of each job's source tick (LinkMainPlan). GPU tasks get their device's threads and
CopyHd tasks between host and device memory, and every register its mem_case (gpu_plan.py). The tasks and
registers become the Plan's TaskProtos, RegstDescs and memory blocks in plan_assemble.py; plan_stages.py runs
the stages in order, recording each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CompileError
from ..ir import (
    COMPUTE_TASK_TYPES,
    INTERFACE_OP_TYPES,
    BlobDesc,
    Job,
    OpConf,
    ParallelConf,
    Plan,
    SbpSignature,
)
from ..ir.plan import encode_task_id
from ..ir.sbp import BROADCAST, input_bns
from ..ops.distribute_ops import ONE_DEVICE_INPUTS, ONE_DEVICE_OUTPUTS
from ..ops.registry import get_op_def
from .boxing import BoxingDecision, Edge, build_sub_task_graph
from .gpu_plan import COMPUTE, GPU_STREAMS, gpu_thrd_id
from .inplace import writes_variable
from .interfaces import check_interfaces
from .main_job import make_main_job
from .passes import SINK_TICK, SOURCE_TICK
from .plan_stages import PlanStage, run_stages
from .slices import Box, box_of, logical_desc, physical_desc, sbp_of

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
    "distribute_split": "DistributeSplit",  # OneFlow's DistributeSplitLogicalNode (split and clone)
    "distribute_clone": "DistributeSplit",
    "distribute_concat": "DistributeConcat",  # DistributeConcatLogicalNode (concat and add)
    "distribute_add": "DistributeConcat",
}  # every other op runs in a NormalForward task
REGISTER_NUM = {"WaitAndSendIds": 100}  # OneFlow's min_register_num for the wait-ids source
TICK_TOCK_TYPES = frozenset({"Tick", "SourceTick", "DeviceTick", "Case", "Esac", "ReentrantLock"})
BOXING_OPS = {"copy": ("slice_boxing_copy", "System-Boxing-BoxingCopy", "SliceBoxing"),
              "add": ("slice_boxing_add", "System-Boxing-BoxingAdd", "SliceBoxing"),
              "zeros": ("boxing_zeros", "System-Boxing-Zeros", "BoxingZeros")}


@dataclass
class BuilderRegst:
    regst_desc_id: int
    producer: int
    regst_type: str
    register_num: int = 1
    consumers: list[int] = field(default_factory=list)
    blobs: dict[str, BlobDesc] = field(default_factory=dict)
    force_inplace: int = -1  # the consumed register whose memory this one is (compiler/inplace.py)
    piece_inplace: tuple[int, int] = (-1, 0)  # a consumed register lying inside this one, at (id, byte offset)


@dataclass
class BuilderTask:
    job_id: int
    op: OpConf
    task_type: str
    machine_id: int
    device_id: int  # -1: the machine's host (a CopyCommNet task)
    thrd_id: int
    task_id: int
    order: int
    chain_id: int
    parallel_id: int = 0
    parallel_num: int = 1
    sbp_signature: SbpSignature | None = None
    produced: dict[str, BuilderRegst] = field(default_factory=dict)
    consumed: dict[str, list[int]] = field(default_factory=dict)
    # per input of its op (op.input_lbns' order): the register that input reads. One blob can reach an op as two
    # arguments in two SBPs (x @ x.T: a local piece and a boxed whole), so the blob's name does not say which
    input_regsts: list[int] = field(default_factory=list)

    def consume(self, name: str, regst: BuilderRegst) -> None:
        ids = self.consumed.setdefault(name, [])
        if regst.regst_desc_id not in ids:
            ids.append(regst.regst_desc_id)
            regst.consumers.append(self.task_id)


class PlanBuilder:
    """OneFlow's TaskGraph for all jobs at once: a task per device of each op, boxing between them, ids.

    Thread ids follow OneFlow's IDMgr (G = gpu_device_num, C = cpu_device_num): six GPU threads per device
    (compute dev, H2D G+dev, D2H 2G+dev, NCCL, Mix, DecodeH2D: compiler/gpu_plan.py), then CPU device threads
    6G..6G+C-1, CommNet 6G+C, the one TickTock thread 6G+C+1 for every tick-like task, then one independent thread
    per other task type and machine (WaitAndSendIds, ForeignInput, ForeignOutput, CallbackNotify). CPU compute
    tasks take the CPU threads round-robin in creation order per job and machine (AllocateCpuThrdIdEvenly), boxing
    nodes by a separate round-robin (PickCpuThrdIdEvenly); a GPU compute task runs on its device's compute
    thread."""

    def __init__(self, cpu_device_num: int, gpu_device_num: int = 0) -> None:
        self.cpu_device_num = cpu_device_num
        self.gpu_device_num = gpu_device_num
        self.cpu_base = GPU_STREAMS * gpu_device_num  # the first CPU thread id
        self.tasks: list[BuilderTask] = []
        self.by_op: dict[tuple[int, str], list[BuilderTask]] = {}
        self.regsts: list[BuilderRegst] = []
        self.task_index: dict[tuple[int, int, int], int] = {}
        self.independent_thrd: dict[tuple[int, str], int] = {}
        self.boxing_offset: dict[int, int] = {}
        self.chains: dict[tuple[int, int, int], list[BuilderTask]] = {}  # (job, machine, device) -> compute chain
        self.proxies: dict[tuple[int, int], BuilderTask] = {}
        self.edges: dict[tuple, BoxingDecision] = {}  # (job, lbn, dst SBP, placement, interface)
        self.logged_edges: set[tuple[int, str, str, str]] = set()  # (job, consumer op, lbn, dst SBP)
        self.boxing_log: dict[int, list[str]] = {}
        self.boxing_nodes = 0  # numbers the System-Boxing-* ops
        self.ops: dict[tuple[int, str], OpConf] = {}  # (job_id, op name) -> op

    # -- tasks -------------------------------------------------------------------------------------
    def new_task(self, job_id: int, op: OpConf, task_type: str, machine: int, device: int, thrd: int,
                 stream: int = 0, **ctx: object) -> BuilderTask:
        key = (machine, thrd, stream)
        index = self.task_index.get(key, 0)
        self.task_index[key] = index + 1
        order = len(self.tasks)
        task = BuilderTask(job_id, op, task_type, machine, device, thrd, encode_task_id(machine, thrd, index, stream),
                     order, order, **ctx)  # type: ignore[arg-type]
        self.tasks.append(task)
        return task

    def thrd_of(self, task_type: str, machine: int) -> int:
        if task_type in TICK_TOCK_TYPES:
            return self.cpu_base + self.cpu_device_num + 1
        key = (machine, task_type)
        if key not in self.independent_thrd:
            used = sum(1 for m, _ in self.independent_thrd if m == machine)
            self.independent_thrd[key] = self.cpu_base + self.cpu_device_num + 2 + used
        return self.independent_thrd[key]

    def add_tasks(self, job_id: int, job: Job) -> None:
        offset: dict[int, int] = {}  # per machine: the next CPU device thread (AllocateCpuThrdIdEvenly)
        for op in job.ops:
            if op.op_type == "source_tick":
                continue  # replaced by the main job's critical-section tick (LinkMainPlan)
            task_type = TASK_TYPES.get(op.op_type, "NormalForward")
            devices = op.parallel_conf.devices
            n = len(devices)
            sig = _task_signature(op, job.sbp_signatures.get(op.name)) if n > 1 else None
            tasks = []
            for parallel_id, (machine, device) in enumerate(devices):
                if task_type in COMPUTE_TASK_TYPES and op.parallel_conf.device_tag == "gpu":
                    thrd = gpu_thrd_id(COMPUTE, device, self.gpu_device_num)
                elif task_type in COMPUTE_TASK_TYPES:
                    thrd = self.cpu_base + offset.get(machine, 0)
                    offset[machine] = (thrd - self.cpu_base + 1) % self.cpu_device_num
                else:
                    thrd = self.thrd_of(task_type, machine)
                task = self.new_task(job_id, _per_device_op(job, op, parallel_id, n), task_type, machine, device,
                                     thrd, parallel_id=parallel_id, parallel_num=n, sbp_signature=sig)
                if task_type in COMPUTE_TASK_TYPES:
                    # a GPU's chain is not the same-numbered CPU device's: device ids are per device type
                    dev_key = device if op.parallel_conf.device_tag == "cpu" else -1 - device
                    chain = self.chains.setdefault((job_id, machine, dev_key), [])
                    task.chain_id = chain[0].chain_id if chain else task.chain_id
                    chain.append(task)
                tasks.append(task)
            self.by_op[(job_id, op.name)] = tasks
            self.ops[(job_id, op.name)] = op

    def regst(self, task: BuilderTask, name: str, regst_type: str) -> BuilderRegst:
        if name not in task.produced:
            regst = BuilderRegst(len(self.regsts), task.task_id, regst_type, REGISTER_NUM.get(task.task_type, 1))
            self.regsts.append(regst)
            task.produced[name] = regst
        return task.produced[name]

    def regst_holding(self, task: BuilderTask, lbn: str) -> BuilderRegst:
        return self.regst(task, _regst_name(task, lbn), "data")

    # -- boxing's TaskGraph ------------------------------------------------------------------------
    def proxy(self, task: BuilderTask, machine: int, lbn: str = "") -> BuilderTask:
        """``task`` on its own machine; else a CopyCommNet task on ``machine`` that reads the register holding
        ``lbn`` (all of its blobs), made once per register and machine (OneFlow's GetProxyNode)."""
        if task.machine_id == machine:
            return task
        regst = self.regst_holding(task, lbn or task.op.output_lbns[0]) if task.op.output_lbns else None
        if regst is None:
            raise CompileError(f"task {task.op.name} produces no data to send to machine {machine}")
        key = (regst.regst_desc_id, machine)
        if key not in self.proxies:
            lbns = tuple(regst.blobs)
            op = OpConf(f"copy_comm_net_{len(self.proxies)}", "copy_comm_net", {"in": lbns}, {"out": lbns},
                        {"src_machine_id": task.machine_id}, ParallelConf("cpu", (f"{machine}:0",)),
                        created_by="boxing")
            copy = self.new_task(task.job_id, op, "CopyCommNet", machine, -1, self.cpu_base + self.cpu_device_num,
                                 stream=task.machine_id)  # CommNet thread; its work stream is the peer machine
            self.regst(copy, "out", "data").blobs.update(regst.blobs)
            copy.consume("in", regst)
            self.proxies[key] = copy
        return self.proxies[key]

    def ctrl_from(self, src: BuilderTask, dst: BuilderTask) -> BuilderRegst:
        """The control register of ``src`` as ``dst`` reads it: ``src``'s own ``out_ctrl``, or, from another
        machine, that of a CopyCommNet task on ``dst``'s machine in ``dst``'s job (made once per register and
        machine): in OneFlow a tick reaches another machine as a register through CopyCommNet like any other,
        never by a control edge between machines, and the main job stays on machine 0."""
        regst, machine = self.regst(src, "out_ctrl", "ctrl"), dst.machine_id
        if src.machine_id == machine:
            return regst
        key = (regst.regst_desc_id, machine)
        if key not in self.proxies:
            op = OpConf(f"copy_comm_net_{len(self.proxies)}", "copy_comm_net", {"in": ()}, {"out": ()},
                        {"src_machine_id": src.machine_id}, ParallelConf("cpu", (f"{machine}:0",)),
                        created_by="boxing")
            copy = self.new_task(dst.job_id, op, "CopyCommNet", machine, -1, self.cpu_base + self.cpu_device_num,
                                 stream=src.machine_id)
            self.regst(copy, "out", "ctrl")
            copy.consume("in", regst)
            self.proxies[key] = copy
        return self.proxies[key].produced["out"]

    def boxing_node(self, kind: str, edge: Edge, machine_id: int, device_id: int, inputs: list[tuple[BuilderTask, Box]],
                    out_box: Box, view_shape: tuple[int, ...], out_desc: BlobDesc) -> BuilderTask:
        op_type, prefix, task_type = BOXING_OPS[kind]
        lbn = edge.lbn
        attrs = {"lbi": lbn, "view_shape": view_shape, "out_slice": out_box.ranges,
                 "in_slice": tuple(box.ranges for _, box in inputs)}
        op = OpConf(f"{prefix}-{self.boxing_nodes}", op_type,
                    {f"in_{i}": (lbn,) for i in range(len(inputs))}, {"out": (lbn,)}, attrs,
                    ParallelConf("cpu", (f"{machine_id}:{device_id}",)), created_by="boxing")
        self.boxing_nodes += 1
        thrd = self.boxing_offset.get(machine_id, 0)  # PickCpuThrdIdEvenly
        self.boxing_offset[machine_id] = (thrd + 1) % self.cpu_device_num
        task = self.new_task(edge.job_id, op, task_type, machine_id, device_id, self.cpu_base + thrd)
        out = self.regst(task, "out", "data")
        out.blobs[lbn] = out_desc
        if task_type == "SliceBoxing":  # SliceBoxingTaskNode: ProduceRegst("out", false, 2, 2)
            out.register_num = 2
        for i, (node, _box) in enumerate(inputs):
            task.consume(f"in_{i}", self.regst_holding(node, lbn))
        return task

    # -- edges -------------------------------------------------------------------------------------
    def connect(self, job_id: int, job: Job) -> None:
        for op in job.ops:
            tasks = self.by_op.get((job_id, op.name))
            if tasks is None:
                continue
            for k, lbn in enumerate(op.output_lbns):
                desc = logical_desc(job, lbn)
                sbp = sbp_of(job, op, _output_bn(lbn), desc)
                for t in _one_device(op, tasks, k, ONE_DEVICE_OUTPUTS)[1]:
                    self.regst_holding(t, lbn).blobs[lbn] = physical_desc(desc, sbp, t.parallel_id, t.parallel_num)
            args = [arg for arg, lbns in op.inputs.items() for _ in lbns]
            op_def = get_op_def(op.op_type)
            writes_in_place = writes_variable(op.op_type, bool(op.output_lbns))
            for k, (arg, (bn, lbn)) in enumerate(zip(args, input_bns(op.inputs, op_def.system))):
                decision = self.edge(job_id, job, op, bn, lbn, k)
                if writes_in_place:
                    self.check_in_place(job_id, job, op, bn, lbn, decision)
                name = arg if tasks[0].task_type == "ReentrantLock" else "in"
                for t, node in zip(_one_device(op, tasks, k, ONE_DEVICE_INPUTS)[1], decision.nodes):
                    regst = self.regst_holding(node, lbn)
                    t.consume(name, regst)
                    t.input_regsts.append(regst.regst_desc_id)
            for name in op.ctrl_in_op_names:
                if name == SOURCE_TICK:
                    continue
                sources = self.by_op[(job_id, name)]
                for k, t in enumerate(tasks):  # device to device when the counts agree, else all to all
                    for s in ([sources[k]] if len(sources) == len(tasks) else sources):
                        t.consume("in_ctrl", self.ctrl_from(s, t))
        self.order_chains(job_id)

    def order_chains(self, job_id: int) -> None:
        for (chain_job, _m, _d), chain in self.chains.items():
            if chain_job != job_id:
                continue
            for a, b in zip(chain, chain[1:]):  # fix the chain's order; memory reuse relies on it
                if not any(r.regst_desc_id in ids for r in a.produced.values() for ids in b.consumed.values()):
                    b.consume("in_ctrl", self.regst(a, "out_ctrl", "ctrl"))

    def edge(self, job_id: int, job: Job, dst_op: OpConf, bn: str, lbn: str, index: int = 0) -> BoxingDecision:
        """What each task of ``dst_op`` reads for input ``bn`` (the blob ``lbn``). As OneFlow, one boxing
        sub-graph serves every consumer reading the blob with the same SBP on the same placement (the
        destination tasks differ but sit on the same devices, so the per-device nodes are the same); the boxing
        log still gets one row per op edge."""
        desc = logical_desc(job, lbn)
        dst_op, dst_tasks = _one_device(dst_op, tuple(self.by_op[(job_id, dst_op.name)]), index, ONE_DEVICE_INPUTS)
        dst_sbp = sbp_of(job, dst_op, bn, desc)
        src_op = self.ops[(job_id, lbn.rpartition("/")[0])]
        src_op, src_tasks = _one_device(src_op, tuple(self.by_op[(job_id, src_op.name)]),
                                        src_op.output_lbns.index(lbn), ONE_DEVICE_OUTPUTS)
        interface = dst_op.op_type in INTERFACE_OP_TYPES
        key = (job_id, lbn, str(dst_sbp), dst_op.parallel_conf.device_tag,
               tuple((t.machine_id, t.device_id) for t in dst_tasks), interface)
        decision = self.edges.get(key)
        edge = Edge(job_id, src_op, dst_op, lbn, desc, src_tasks, dst_tasks,
                    sbp_of(job, src_op, _output_bn(lbn), desc), dst_sbp, interface)
        if decision is None:
            decision = self.edges[key] = build_sub_task_graph(self, edge)
        logged = (job_id, dst_op.name, lbn, str(dst_sbp))
        if (len(edge.src_tasks) > 1 or len(edge.dst_tasks) > 1) and logged not in self.logged_edges:
            self.logged_edges.add(logged)
            self.boxing_log.setdefault(job_id, []).append(edge.log_row(decision.builder, decision.comment))
        return decision

    def check_in_place(self, job_id: int, job: Job, op: OpConf, bn: str, lbn: str, decision: BoxingDecision) -> None:
        """An op that updates a variable in place (an optimizer, assign, model init or load) must read the
        variable's own registers: through boxing it would update a copy and the variable would never change."""
        src = self.by_op[(job_id, lbn.rpartition("/")[0])]
        if src[0].op.op_type != "variable" or all(n in src for n in decision.nodes):
            return
        desc = logical_desc(job, lbn)
        raise CompileError(
            f"op {op.name!r} ({op.op_type}) in job {job.name!r} updates variable {src[0].op.name!r} in place, but "
            f"takes {bn!r} as {sbp_of(job, op, bn, desc)} on {op.parallel_conf} while the variable is "
            f"{sbp_of(job, src[0].op, 'out', desc)} on {src[0].op.parallel_conf}; an in-place update needs the "
            "variable's own placement and SBP (boxing would give it a copy)")

    def link_main(self, main_id: int, jobs: list[Job]) -> None:
        (esac,) = (t for t in self.tasks if t.job_id == main_id and t.task_type == "Esac")
        for job_id, job in enumerate(jobs):
            (tick,) = self.by_op[(main_id, f"System-Main-Tick_CriticalSection_{job_id}")]
            for op in job.ops:
                if SOURCE_TICK in op.ctrl_in_op_names:
                    for t in self.by_op[(job_id, op.name)]:
                        t.consume("in_ctrl", self.ctrl_from(tick, t))
            for sink in self.by_op[(job_id, SINK_TICK)]:
                esac.consume("in", self.ctrl_from(sink, esac))
        lock = next(t for t in self.tasks if t.job_id == main_id and t.task_type == "ReentrantLock")
        lock.consume("end", esac.produced["out"])  # ConnectCriticalSectionEndToReentrantLockEnd


def _output_bn(lbn: str) -> str:
    """An output's bn_in_op: the blob part of its lbn (``out_0``; ``out`` for system ops), as ir.sbp.output_bns."""
    return lbn.rpartition("/")[2]


def _one_device(op: OpConf, tasks: Sequence[Any], index: int, kinds: frozenset[str]
                ) -> tuple[OpConf, tuple[Any, ...]]:
    """A distribute op's output (``kinds`` ONE_DEVICE_OUTPUTS) or input (ONE_DEVICE_INPUTS) ``index`` lives on
    device ``index`` of its placement alone: the op as that device sees it, and its one task; else as given."""
    if op.op_type not in kinds or op.attrs.get("mirrored") or len(tasks) == 1:
        return op, tuple(tasks)
    t = tasks[index]
    return op.replace(parallel_conf=ParallelConf(op.parallel_conf.device_tag, (f"{t.machine_id}:{t.device_id}",))), (t,)


def _task_signature(op: OpConf, sig: SbpSignature | None) -> SbpSignature | None:
    """A task's signature names the blobs of the op it runs: a DistributeConcat/Add task reads its own device's
    whole blob, ``in`` (B as that device sees it), not the op's ``in_<i>``."""
    if sig is None or op.op_type not in ONE_DEVICE_INPUTS or op.attrs.get("mirrored"):
        return sig
    return SbpSignature({**{bn: s for bn, s in sig.bn_in_op2sbp_parallel.items() if not bn.startswith("in")},
                         "in": BROADCAST})


def _per_device_op(job: Job, op: OpConf, parallel_id: int, parallel_num: int) -> OpConf:
    """The op a device's task runs. Model I/O on a split variable works on its device's slice of the logical value
    (OneFlow's check_point_v2 slice-assigns the same way): the slice and the logical shape go in its attrs. A
    distribute op's task copies its own device's blob: only that output (or input) is its."""
    if parallel_num > 1 and not op.attrs.get("mirrored"):
        if op.op_type in ONE_DEVICE_OUTPUTS:
            return op.replace(outputs={"out": (op.outputs["out"][parallel_id],)})
        if op.op_type in ONE_DEVICE_INPUTS:
            return op.replace(inputs={"in": (op.inputs["in"][parallel_id],)})
    if parallel_num == 1 or op.op_type not in ("model_init", "model_load", "model_save"):
        return op
    (lbn,) = op.inputs["ref"]
    desc = logical_desc(job, lbn)
    sbp = sbp_of(job, job.producer_of(lbn), _output_bn(lbn), desc)
    if not sbp.is_split:
        return op
    box = box_of(desc.shape, sbp, parallel_id, parallel_num)
    return op.replace(attrs={**op.attrs, "logical_shape": desc.shape, "ref_slice": box.ranges})


def _regst_name(task: BuilderTask, lbn: str) -> str:
    """A Case task has one register per branch (``out_<i>``); every other task puts its outputs in ``out``."""
    return lbn.rpartition("/")[2] if task.task_type == "Case" else "out"


def build_plan(jobs: list[Job], cpu_device_num: int = 1, boxing_log: dict[int, list[str]] | None = None,
               gpu_device_num: int = 0, stages: list[PlanStage] | None = None) -> tuple[Job, Plan]:
    """Compile the (completed) jobs, in job_id order, and the main job made for them, into one Plan.
    ``boxing_log``, when given, receives each job's boxing decisions as CSV rows (OneFlow's boxing logger).
    ``gpu_device_num``: GPUs per machine (OneFlow's resource.gpu_device_num); it lays out the thread ids.
    ``stages``, when given, receives each stage with its tables before and after (plan_stages.py)."""
    check_interfaces(jobs)
    main = make_main_job(jobs)
    pb = PlanBuilder(cpu_device_num, gpu_device_num)
    plan = run_stages(pb, [*jobs, main], stages)
    if boxing_log is not None:
        boxing_log.update(pb.boxing_log)
    return main, plan
