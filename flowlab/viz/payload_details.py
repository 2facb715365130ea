"""The structured detail pane of a payload node: title + sections of ``[key, value]`` string rows.

An op shows its conf, attrs, inputs and outputs with blob descs, the pass that created it and the user's source
line; a task adds its registers, each with producer, consumers, ``register_num``, memory block and the block's
other tenants. Values are plain strings (never HTML): the front end inserts them as text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from itertools import islice
from typing import Any

from flowlab.ir import BlobDesc, Job, MemBlock, OpConf, RegstDesc, TaskProto
from flowlab.ir.op_conf import ParallelConf, format_attr
from flowlab.ir.plan import short_task_id

Rows = list[list[str]]
MAX_TENANTS = 12  # a block shared by hundreds of registers lists a dozen and counts the rest


def section(title: str, rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    return {"title": title, "rows": [[k, v] if type(k) is str and type(v) is str else [str(k), str(v)]
                                     for k, v in rows]}


@lru_cache(maxsize=4096)
def desc_text(desc: BlobDesc) -> str:
    """``f32[100,512]``; cached, since a 10,000-task Plan repeats a few shapes thousands of times."""
    return str(desc)


def created_by_pass(passes: Sequence[Any] | None) -> dict[tuple[str, str], str]:
    """(job name, op name) -> the pass that added the op, from the session's recorded passes."""
    found: dict[tuple[str, str], str] = {}
    for record in passes or ():
        for name in record.added:
            found.setdefault((record.job_name, name), record.name)
    return found


def op_sections(job: Job, op: OpConf, creator: str | None, loc: Callable[[str], str]) -> list[dict[str, Any]]:
    rows: Rows = [["name", op.name], ["op_type", op.op_type], ["job", f"{job.name} ({job.kind})"]]
    rows.append(["created by", f"pass {creator}" if creator else op.created_by])
    if op.loc:
        rows.append(["source", loc(op.loc)])
    if op.parallel_conf != ParallelConf():
        rows.append(["placement", str(op.parallel_conf)])
    if op.ctrl_in_op_names:
        rows.append(["ctrl_in", ", ".join(op.ctrl_in_op_names)])
    conf = job.format_op(op)  # the op as `print(job)` shows it, but naming the cell, not IPython's temp file
    if op.loc and conf.endswith(f"  # {op.loc}"):
        conf = conf[: -len(op.loc)] + loc(op.loc)
    rows.append(["conf", conf])
    out = [section("op", rows)]
    if op.attrs:
        out.append(section("attrs", [[k, format_attr(v)] for k, v in op.attrs.items()]))
    inputs = [[f"{arg}", f"{lbn}  {_desc(job, lbn)}"] for arg, lbns in op.inputs.items() for lbn in lbns]
    if inputs:
        out.append(section("inputs", inputs))
    outputs = [[lbn, _desc(job, lbn)] for lbn in op.output_lbns]
    if outputs:
        out.append(section("outputs", outputs))
    return out


def _desc(job: Job, lbn: str) -> str:
    desc = job.blob_descs.get(lbn)
    return desc_text(desc) if desc is not None else "?"


def blob_label(regst: RegstDesc) -> str:
    """An edge's label: the shapes and dtypes the register carries (``f32[100,512]``); none for a ctrl register,
    whose edge kind already says so (a Plan has hundreds of them)."""
    if regst.is_ctrl or not regst.lbi2blob_desc:
        return ""
    return ", ".join(desc_text(desc) for desc in regst.lbi2blob_desc.values())


class PlanIndex:
    """Lookups a task's detail needs, built once per Plan (a 10,000-task Plan must stay fast)."""

    def __init__(self, tasks: Sequence[TaskProto], blocks: Sequence[MemBlock]) -> None:
        self.task_by_id = {t.task_id: t for t in tasks}
        self.regst_by_id: dict[int, RegstDesc] = {}
        self.tenants: dict[int, list[int]] = {}
        for task in tasks:
            for regst in task.produced_regst_desc.values():
                self.regst_by_id[regst.regst_desc_id] = regst
                if regst.mem_block_id >= 0:
                    self.tenants.setdefault(regst.mem_block_id, []).append(regst.regst_desc_id)
        # a variable register -> the gathered registers holding it as their rows (compiler/gather_inplace.py)
        self.piece_holders: dict[int, list[RegstDesc]] = {}
        for regst in self.regst_by_id.values():
            if regst.piece_inplace_consumed_regst_desc_id >= 0:
                self.piece_holders.setdefault(regst.piece_inplace_consumed_regst_desc_id, []).append(regst)
        self.block_by_id = {b.mem_block_id: b for b in blocks}

    def task_name(self, task_id: int) -> str:
        task = self.task_by_id.get(task_id)
        return task.name if task is not None else f"task {task_id}"

    def regst_section(self, name: str, regst: RegstDesc, job_names: Sequence[str]) -> dict[str, Any]:
        rows: Rows = [["id", f"r{regst.regst_desc_id}"], ["type", regst.regst_desc_type],
                      ["producer", self.task_name(regst.producer_task_id)],
                      ["consumers", ", ".join(self.task_name(t) for t in regst.consumer_task_ids) or "none"],
                      ["register_num", str(regst.register_num)]]
        rows.extend([lbn, desc_text(desc)] for lbn, desc in regst.lbi2blob_desc.items())
        if regst.inplace_consumed_regst_desc_id >= 0:  # a variable's ref (compiler/inplace.py): no bytes of its own
            rid = regst.inplace_consumed_regst_desc_id
            owner = self.regst_by_id.get(rid)
            of = f" ({self.task_name(owner.producer_task_id)})" if owner is not None else ""
            force = regst.force_inplace_consumed_regst_desc_id
            rows.append(["in place of", f"r{rid}{of}: the same bytes, no allocation of its own"
                                        + (f" (force_inplace_consumed_regst_desc_id r{force})" if force >= 0 else "")])
        if regst.piece_inplace_consumed_regst_desc_id >= 0:  # an all-gather around a device's own rows
            piece = self.regst_by_id.get(regst.piece_inplace_consumed_regst_desc_id)
            of = f" ({self.task_name(piece.producer_task_id)})" if piece is not None else ""
            rows.append(["shared memory", f"bytes {regst.piece_inplace_offset}.. are r"
                         f"{regst.piece_inplace_consumed_regst_desc_id}{of}, held in place: not copied, its update "
                         "writes them (piece_inplace_consumed_regst_desc_id)"])
        for holder in self.piece_holders.get(regst.regst_desc_id, ()):
            rows.append(["shared memory", f"also r{holder.regst_desc_id} ({self.task_name(holder.producer_task_id)})"
                                          f" from its byte {holder.piece_inplace_offset}: it gathers around it"])
        block = self.block_by_id.get(regst.mem_block_id)
        if block is not None:
            jobs = ", ".join(job_names[j] if 0 <= j < len(job_names) else str(j) for j in block.job_ids)
            kind = "reused" if block.enable_reuse_mem else "fixed"
            rows.append(["memory block", f"b{block.mem_block_id} + {regst.mem_block_offset} "
                                         f"({block.mem_size} B, {block.mem_case}, {kind}; jobs {jobs})"])
            tenants = self.tenants.get(block.mem_block_id, ())
            others = list(islice((r for r in tenants if r != regst.regst_desc_id), MAX_TENANTS))
            if others:
                shown = ", ".join(f"r{r} ({self.task_name(self.regst_by_id[r].producer_task_id)})" for r in others)
                extra = len(tenants) - 1 - len(others)
                rows.append(["block's other tenants", shown + (f" and {extra} more" if extra > 0 else "")])
        return section(f"register {name} (r{regst.regst_desc_id})", rows)

    def task_sections(self, task: TaskProto, job_names: Sequence[str]) -> list[dict[str, Any]]:
        job = job_names[task.job_id] if 0 <= task.job_id < len(job_names) else str(task.job_id)
        rows: Rows = [["task_type", task.task_type], ["task_id", f"{task.task_id} ({short_task_id(task.task_id)})"],
                      ["job", f"{job} (job_id {task.job_id})"], ["machine_id", str(task.machine_id)],
                      ["thrd_id", str(task.thrd_id)], ["chain_id", str(task.chain_id)],
                      ["order_in_graph", str(task.order_in_graph)]]
        if task.parallel_num > 1:
            rows.append(["parallel", f"{task.parallel_id} of {task.parallel_num}"])
        out = [section("task", rows)]
        consumed = [[name, ", ".join(f"r{i} from {self._producer_of(i)}" for i in ids)]
                    for name, ids in task.consumed_regst_desc_id.items()]
        if consumed:
            out.append(section("consumes", consumed))
        out.extend(self.regst_section(name, regst, job_names) for name, regst in task.produced_regst_desc.items())
        return out

    def _producer_of(self, regst_id: int) -> str:
        regst = self.regst_by_id.get(regst_id)
        return self.task_name(regst.producer_task_id) if regst is not None else "?"


def loc_mapper(names: Mapping[str, str] | None) -> Callable[[str], str]:
    """``"1218483366.py:12"`` -> ``"cell [3], line 12"`` where ``names`` maps IPython's cell file names."""
    if not names:
        return lambda loc: loc

    def mapped(loc: str) -> str:
        file, sep, line = loc.rpartition(":")
        where = names.get(file)
        return f"{where}, line {line}" if where and sep else loc

    return mapped


# what a candidate's "order value" is (compiler/sbp_infer.py, OneFlow's Operator::InferSbpSignature), in the pane
ORDER_VALUE = ("the smallest order value wins, then the smallest copy cost. Order value, per input: -8 where the "
               "candidate keeps its producer's SBP, -1 where it splits the blob on its batch axis, -2 where the blob "
               "has no batch axis and neither side splits it; per output, -1 where it splits on the batch axis")


# Job -> {op name: SbpExplanation}: compiler/sbp_explain.py's ``explain_job_sbp``. viz may import only ir, so the
# package above both hands it in (flowlab/__init__.py, at import); the explanation is SBP inference's, not viz's.
_explain_job_sbp: Callable[[Job], Mapping[str, Any]] | None = None


def use_sbp_explainer(explain_job_sbp: Callable[[Job], Mapping[str, Any]]) -> None:
    """Where ``sbp_sections`` gets each op's explanation (``import flowlab`` passes compiler's)."""
    global _explain_job_sbp
    _explain_job_sbp = explain_job_sbp


def sbp_sections(job: Job) -> dict[str, dict[str, Any]]:
    """Per op of a job on several devices, an "sbp" section: the signature chosen and ``explain_sbp``'s reasoning
    (each candidate's order value and copy cost, the boxing it causes). Empty for a one-device job."""
    if all(len(op.parallel_conf.devices) == 1 for op in job.ops):
        return {}
    if _explain_job_sbp is None:
        raise RuntimeError("viz.payload_details has no SBP explainer: import flowlab (it passes compiler's "
                           "explain_job_sbp to use_sbp_explainer) before building a multi-device view")
    out = {}
    for name, why in _explain_job_sbp(job).items():
        d = why.decision
        rows: Rows = [["placement", why.placement], ["chosen", ", ".join(
            f"{bn}: {s}" for bn, s in d.chosen.bn_in_op2sbp_parallel.items())]]
        rows += [[f"input {bn}", f"{lbn} @{where}: {d.producer_sbp[bn]}"] for bn, lbn, where in why.inputs]
        rows += [[f"hint {bn}", str(s)] for bn, s in d.hints.items()]
        for k, c in enumerate(d.candidates):
            mark = " (chosen)" if c.signature == d.chosen and not c.excluded else ""
            cost = why.format_cost(c.copy_cost)
            rows.append([f"candidate {k}", f"{c.signature}  order {c.order_value}  cost {cost}{mark}"
                         + (f"  excluded: {c.excluded}" if c.excluded else "")])
        rows.append(["how chosen", ORDER_VALUE])
        rows += [["note", note] for note in (*d.notes, *why.notes)]  # a mirrored op run per device; a pass's hint
        rows.append(["boxing", "; ".join(why.boxing) if why.boxing else "none"])
        out[name] = section("sbp", rows)
    return out
