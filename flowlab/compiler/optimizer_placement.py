"""OptimizerPlacementOptimizationPass (OneFlow v0.3.4, job_rewriter/optimizer_placement_optimization_pass.cpp).

A train job with ``optimizer_placement_optimization_mode`` set rewrites where its data-parallel variables lie
before autograd, so the gradients and updates made later follow:

- ``distributed_split``: each such variable lies S(0) (its ``split_axis``) and its consumers read it as B, so the
  variable is all-gathered before the forward, its gradient arrives P -> S(0) (a reduce-scatter: each device adds
  only its half) and each device updates only its half (the optimizer state lies S(0) too).
- ``non_distributed``: each variable (with its naive successors) moves to one device of its placement, balanced
  by model size; consumers read it as B, and its update runs on that device alone.

A *data-parallel sequence* is a variable on several devices that lies B, followed by the ops that take only it
and give one B blob without a batch axis; only variables of at least ``threshold`` elements per device count,
and for distributed_split only those whose dim 0 divides by the device count. The sequences of one placement are
chained with control edges on their variables, in the order of their first consumers.

Deviations: OneFlow applies the pass to GPU placements only; flowlab's devices are CPU first, so it applies to
CPU placements as well. OneFlow's non_distributed chains every variable after the first of its device
(``sequences.at(i - i)``, an accident); flowlab chains each after the previous one, as distributed_split does.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CompileError
from ..frontend.builder import JobBuilder
from ..ir import Job, OpConf, ParallelConf
from ..ir.sbp import BROADCAST, SbpParallel, split
from ..ops.registry import get_op_def
from .sbp_infer import JobSbp

MODE_KEY = "optimizer_placement_optimization_mode"
THRESHOLD_KEY = "optimizer_placement_optimization_threshold"
MOVED_KEY = "optimizer_placement_moved_variables"  # job_conf: the variables the pass moved, for the sharing check
HINTS_KEY = "optimizer_placement_hints"  # job_conf: op -> bn -> why the pass set that hint (explain_sbp shows it)


@dataclass(frozen=True)
class NodeSequence:
    """OneFlow's DataParallelNodeSequence: a variable and its naive successors, ordered by first consumer."""

    nodes: tuple[OpConf, ...]
    order: int  # the smallest topological index of the last node's consumers
    model_size: int  # the variable's bytes

    @property
    def variable(self) -> OpConf:
        return self.nodes[0]

    @property
    def last(self) -> OpConf:
        return self.nodes[-1]


class _Graph:
    """What the pass asks of OneFlow's OpGraph: consumers, topological order and each blob's SBP and batch axis,
    inferred on the job as it is now (before autograd)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.order = {op.name: k for k, op in enumerate(job.ops)}
        self.consumers: dict[str, list[OpConf]] = defaultdict(list)  # producer op -> consumer ops, once each
        for op in job.ops:
            for producer in dict.fromkeys(lbn.rpartition("/")[0] for lbn in op.input_lbns):
                self.consumers[producer].append(op)
        self.sbp = JobSbp(job, {})
        for op in job.ops:
            self.sbp.infer(op)

    def in_sbp(self, op: OpConf, bn: str) -> SbpParallel:
        return self.sbp.signatures[op.name][bn]

    def s0_supported(self, op: OpConf) -> bool:
        """OneFlow's IsS0SignatureSupported: one input, one output, and a candidate taking and giving S(0)."""
        ctx, ins, outs = self.sbp.ctx(op)
        if len(ins) != 1 or len(outs) != 1:
            return False
        cands = get_op_def(op.op_type).sbp_rule(ctx)
        return any(c.get(ins[0][0]) == split(0) and c.get(outs[0][0]) == split(0) for c in cands)


def _model_size(job: Job, var: OpConf) -> int:
    desc = job.blob_descs[var.output_lbns[0]]
    return math.prod(desc.shape) * desc.dtype.itemsize


Allowed = Callable[[OpConf], bool]


def _sequence(graph: _Graph, start: OpConf, allowed: Allowed) -> tuple[OpConf, ...]:
    """OneFlow's GetDataParallelVariableAndNaiveSuccNode."""
    if start.op_type != "variable" or start.parallel_conf.parallel_num == 1:
        return ()
    nodes: list[OpConf] = []
    cur: OpConf | None = start
    while cur is not None:
        ins, outs = graph.sbp.ctx(cur)[1:]
        if cur is not start:
            producers = {lbn.rpartition("/")[0] for lbn in cur.input_lbns}
            if cur.parallel_conf != start.parallel_conf or len(producers) > 1 or len(ins) != 1:
                break
            if not graph.in_sbp(cur, ins[0][0]).is_broadcast:
                break
        if not allowed(cur) or len(outs) != 1:
            break
        bn, lbn = outs[0]
        if not graph.in_sbp(cur, bn).is_broadcast or graph.sbp.batch_axis.get(lbn) is not None:
            break
        nodes.append(cur)
        after = graph.consumers.get(cur.name, [])
        cur = after[0] if len(after) == 1 else None
    return tuple(nodes)


def _sequences_by_placement(graph: _Graph, allowed: Allowed) -> dict[ParallelConf, list[NodeSequence]]:
    out: dict[ParallelConf, list[NodeSequence]] = defaultdict(list)
    for op in graph.job.ops:
        nodes = _sequence(graph, op, allowed)
        mirrored = set(graph.job.mirrored_op_names)
        if not nodes or any(c.name in mirrored for n in nodes for c in graph.consumers.get(n.name, [])):
            continue  # a mirrored op takes a consistent blob's pieces as they lie: it must stay B (whole per device)
        order = min((graph.order[c.name] for c in graph.consumers.get(nodes[-1].name, [])), default=len(graph.job.ops))
        out[op.parallel_conf].append(NodeSequence(nodes, order, _model_size(graph.job, op)))
    return out


def _read_as_broadcast(builder: JobBuilder, graph: _Graph, seq: NodeSequence, mode: str) -> None:
    """OneFlow's SetBroadcastParallel4Consumers: every consumer of the sequence's blob reads it whole."""
    lbn = seq.last.output_lbns[0]
    for consumer in graph.consumers.get(seq.last.name, []):
        for bn, in_lbn in graph.sbp.ctx(consumer)[1]:
            if in_lbn == lbn:
                builder.set_sbp_hint(consumer.name, bn, BROADCAST)
                note_hint(builder, consumer.name, bn, f"B set by OptimizerPlacementOptimizationPass ({mode}): "
                           f"{seq.variable.name!r} is read whole by its consumers")


def note_hint(builder: JobBuilder, op_name: str, bn: str, why: str) -> None:
    """Record why a pass set ``op_name``'s hint on ``bn``, for explain_sbp (job_conf, so it prints and serializes
    with the job)."""
    notes = {name: dict(bns) for name, bns in builder.job_conf.get(HINTS_KEY, {}).items()}
    notes.setdefault(op_name, {})[bn] = why
    builder.job_conf[HINTS_KEY] = notes


def _chain(builder: JobBuilder, names: list[str]) -> None:
    """Each variable's op waits for the previous one's (OneFlow's ctrl_in_op_name on the variable conf)."""
    index = {op.name: k for k, op in enumerate(builder.ops)}
    for prev, name in zip(names, names[1:]):
        op = builder.ops[index[name]]
        builder.ops[index[name]] = op.replace(ctrl_in_op_names=(*op.ctrl_in_op_names, prev))


def _note_moved(builder: JobBuilder, names: list[str]) -> None:
    builder.job_conf[MOVED_KEY] = (*builder.job_conf.get(MOVED_KEY, ()), *names)


def _distributed_split(job: Job, threshold: int) -> Job:
    def allowed(op: OpConf) -> bool:
        if op.op_type == "variable":
            shape, n = job.blob_descs[op.output_lbns[0]].shape, op.parallel_conf.parallel_num
            return len(shape) > 0 and shape[0] % n == 0 and math.prod(shape) >= threshold * n
        return graph.s0_supported(op)

    graph = _Graph(job)
    builder = JobBuilder.reopen(job, "OptimizerPlacementOptimizationPass")
    for sequences in _sequences_by_placement(graph, allowed).values():
        sequences.sort(key=lambda s: s.order)  # stable, as std::sort on distinct orders
        for seq in sequences:
            builder.set_sbp_hint(seq.variable.name, "out", split(0))
            note_hint(builder, seq.variable.name, "out", "S(0) set by OptimizerPlacementOptimizationPass "
                       "(distributed_split): each device holds and updates its rows")
            _read_as_broadcast(builder, graph, seq, "distributed_split")
        _chain(builder, [s.variable.name for s in sequences])
        _note_moved(builder, [s.variable.name for s in sequences])
    return builder.build()


def _non_distributed(job: Job, threshold: int) -> Job:
    def allowed(op: OpConf) -> bool:
        if op.op_type == "variable":
            return math.prod(job.blob_descs[op.output_lbns[0]].shape) >= threshold * op.parallel_conf.parallel_num
        return True

    graph = _Graph(job)
    builder = JobBuilder.reopen(job, "OptimizerPlacementOptimizationPass")
    index = {op.name: k for k, op in enumerate(builder.ops)}
    for placement, sequences in _sequences_by_placement(graph, allowed).items():
        sequences.sort(key=lambda s: -s.model_size)  # largest first, each to the least loaded device
        loads = [0] * placement.parallel_num
        parts: list[list[NodeSequence]] = [[] for _ in loads]
        for seq in sequences:
            device = loads.index(min(loads))
            loads[device] += seq.model_size
            parts[device].append(seq)
        for device, part in enumerate(parts):
            machine, dev = placement.devices[device]
            one = ParallelConf(placement.device_tag, (f"{machine}:{dev}",))
            for seq in part:
                for node in seq.nodes:
                    builder.ops[index[node.name]] = builder.ops[index[node.name]].replace(parallel_conf=one)
                _read_as_broadcast(builder, graph, seq, "non_distributed")
            _chain(builder, [s.variable.name for s in sorted(part, key=lambda s: s.order)])
            _note_moved(builder, [s.variable.name for s in part])
    return builder.build()


def optimizer_placement_optimization(job: Job) -> Job:
    """The pass: a no-op unless ``job`` trains and its config names a mode."""
    mode = job.job_conf.get(MODE_KEY)
    if job.job_conf.get("job_type") != "train" or mode is None:
        return job
    if not any(op.op_type == "variable" and op.parallel_conf.parallel_num > 1 for op in job.ops):
        return job  # nothing data-parallel to move: spare the SBP inference the pass would need
    threshold = int(job.job_conf.get(THRESHOLD_KEY, 1024))
    if mode == "distributed_split":
        return _distributed_split(job, threshold)
    if mode == "non_distributed":
        return _non_distributed(job, threshold)
    raise CompileError(f"job {job.name!r}: optimizer_placement_optimization_mode {mode!r} is not one of "
                       "'distributed_split', 'non_distributed'")


def check_not_sharing_moved_variables(jobs: list[Job]) -> None:
    """OneFlow's CheckNonDistributeOptimizerAvailable: the optimization holds only for variables no other job
    shares, since jobs share a variable's memory per device and so must lay it out alike."""
    for job in jobs:
        for name in job.job_conf.get(MOVED_KEY, ()):
            mine = job.op(name)
            for other in jobs:
                if other is job or not other.has_op(name):
                    continue
                theirs, sbp = other.op(name), other.sbp_signatures[name]["out"]
                if theirs.parallel_conf == mine.parallel_conf and sbp == job.sbp_signatures[name]["out"]:
                    continue
                where = f" (created at {mine.loc})" if mine.loc else ""
                now = f"lies {job.sbp_signatures[name]['out']} on {mine.parallel_conf}"
                raise CompileError(
                    f"variable {name!r}{where}: train job {job.name!r} sets optimizer_placement_optimization_mode "
                    f"{job.job_conf[MODE_KEY]!r}, so the variable {now} there, but job {other.name!r} shares it as "
                    f"{sbp} on {theirs.parallel_conf}. As in OneFlow, the optimization holds only when jobs do not "
                    "share the variables it moves: give the other job's get_variable the same placement and "
                    "distribute=, or raise optimizer_placement_optimization_threshold above the variable's size.")
