"""Why an op got its SBP signature: SBP inference explaining itself (``flow.debug.explain_sbp(job, op_name)``
re-exports it; the views' detail panes show it).

Inference is replayed on the job (deterministic: the job keeps its hints in ``sbp_hints``, and its interface
ops' signatures are what the compiler forced them to), and the op's decision is shown: each candidate with its
order value and copy cost (smaller wins, order value first), the ones hints or short axes excluded, the one
chosen, and the boxing it asks for at the job level (an input whose producer lies otherwise). Which boxing tasks
that becomes is the plan's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir import Job
from ..ir.sbp import input_bns
from ..ops.registry import get_op_def
from .optimizer_placement import HINTS_KEY
from .sbp_infer import INT32_MAX, INT64_MAX, INTERFACE_OPS, SbpDecision, infer_job_sbp


@dataclass(frozen=True)
class SbpExplanation:
    job_name: str
    placement: str
    decision: SbpDecision
    inputs: tuple[tuple[str, str, str], ...]  # (bn, producer lbn, producer's placement)
    boxing: tuple[str, ...]  # "a_0: S(0) -> B" for each input that must change how it lies
    notes: tuple[str, ...] = ()  # where a hint a pass set came from (the optimizer placement pass)

    def to_dict(self) -> dict[str, Any]:
        d = self.decision
        return {
            "job": self.job_name, "op": d.op_name, "op_type": d.op_type, "placement": self.placement,
            "parallel_num": d.parallel_num, "loc": d.loc,
            "inputs": [{"bn": bn, "lbn": lbn, "placement": where, "sbp": str(d.producer_sbp[bn]),
                        "batch_axis": d.batch_axes.get(bn)} for bn, lbn, where in self.inputs],
            "hints": {bn: str(s) for bn, s in d.hints.items()},
            "candidates": [c.to_dict() for c in d.candidates],
            "chosen": {bn: str(s) for bn, s in d.chosen.bn_in_op2sbp_parallel.items()},
            "boxing": list(self.boxing),
            "notes": [*d.notes, *self.notes],  # how it was run (per device), where a pass's hint came from
        }

    def __str__(self) -> str:
        d = self.decision
        head = f"op {d.op_name} ({d.op_type}) of job {self.job_name} on {self.placement}" + (
            f"  # {d.loc}" if d.loc else "")
        lines = [head]
        for bn, lbn, where in self.inputs:
            axis = d.batch_axes.get(bn)
            lines.append(f"  input {bn} = %{lbn} @{where}: {d.producer_sbp[bn]}"
                         + (f" (batch axis {axis})" if axis is not None else ""))
        if d.hints:
            lines.append("  hints: " + ", ".join(f"{bn}: {s}" for bn, s in d.hints.items()))
        lines.extend(f"    {note}" for note in self.notes)
        if d.parallel_num == 1:
            lines.append("  one device: every blob S(0), no candidates considered (as in OneFlow)")
        else:
            lines.append("  candidates (order value, copy cost; smallest wins, the first of equals):")
            lines.append("    (order value: -8 per input that stays as its producer made it, -1 per blob split on its "
                         "batch axis, -2 per unsplit input without one)")
            for c in d.candidates:
                mark = "*" if c.signature == d.chosen and not c.excluded else " "
                why = f"  excluded: {c.excluded}" if c.excluded else ""
                lines.append(f"  {mark} {c.signature}  order {c.order_value}  cost {format_cost(c.copy_cost)}{why}")
        lines.append(f"  chosen: {d.chosen}")
        lines.extend(f"  note: {note}" for note in d.notes)
        lines.append("  boxing: " + ("; ".join(self.boxing) if self.boxing else "none"))
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    @staticmethod
    def format_cost(cost: int) -> str:  # for readers that may not import compiler/ (viz's detail pane)
        return format_cost(cost)


def format_cost(cost: int) -> str:
    """A copy cost as people read it: bytes, and OneFlow's two sentinels by what they mean. A cost is a sum over
    the inputs, each 0, the blob's bytes, INT32_MAX (a broadcast input made into something else) or INT64_MAX
    (a partial-sum input, saturating), so ``INT32_MAX + 8192`` reads "8,192 B + 1 x INT32_MAX (...)"."""
    if cost >= INT64_MAX:
        return "infinite (a partial-sum input)"
    leaving_b, nbytes = divmod(cost, INT32_MAX)
    parts = [f"{nbytes:,} B"] if nbytes or not leaving_b else []
    if leaving_b:
        parts.append(f"{leaving_b} x INT32_MAX ({'an input' if leaving_b == 1 else 'inputs'} leaving B)")
    return " + ".join(parts)


def explain_sbp(job: Job, op_name: str) -> SbpExplanation:
    """How ``op_name``'s signature in ``job`` (a compiled job, e.g. ``session.job_set.job(...)``) was chosen."""
    if not isinstance(job, Job):
        raise TypeError(f"explain_sbp takes a Job (e.g. flow.default_session().job_set.job('name')); got {job!r}")
    return explain_job_sbp(job, [op_name])[op_name]


def explain_job_sbp(job: Job, op_names: list[str] | None = None) -> dict[str, SbpExplanation]:
    """``explain_sbp`` of several ops (all by default) with one replay of the job's inference (the views show
    every op's; one replay per op would be quadratic)."""
    ops = [job.op(name) for name in op_names] if op_names is not None else list(job.ops)
    forced = {o.name: job.sbp_signatures[o.name]["out"] for o in job.ops
              if o.op_type in INTERFACE_OPS and o.name in job.sbp_signatures}
    _, decisions = infer_job_sbp(job, forced)
    placements = {lbn: str(o.parallel_conf) for o in job.ops for lbn in o.output_lbns}
    out = {}
    for op in ops:
        if op.name not in decisions:
            continue
        decision = decisions[op.name]
        bns = input_bns(op.inputs, get_op_def(op.op_type).system)
        inputs = tuple((bn, lbn, placements.get(lbn, "?")) for bn, lbn in bns)
        boxing = []
        for bn, _lbn, where in inputs:
            have, want = decision.producer_sbp[bn], decision.chosen[bn]
            if have != want or where != str(op.parallel_conf):
                boxing.append(f"{bn}: {have} @{where} -> {want} @{op.parallel_conf}")
        notes = tuple(f"{bn}: {why}" for bn, why in job.job_conf.get(HINTS_KEY, {}).get(op.name, {}).items())
        out[op.name] = SbpExplanation(job.name, str(op.parallel_conf), decision, inputs, tuple(boxing), notes)
    return out
