"""InferSbpSignatures: choose every op's SBP signature as OneFlow does (``Operator::InferSbpSignature``).

For an op on one device every blob is S(0) and nothing else is considered. Otherwise: the op's candidates (its
``OpDef.sbp`` rule) plus the all-broadcast signature; keep those that agree with the op's hints (a filter, not a
preference); drop those splitting a blob on an axis shorter than the device count; take the smallest
(order value, copy cost), the first on ties. Per input, against the SBP its producer was given:

- order value: -1 if the candidate splits the blob on its batch axis; -2 if the blob has no batch axis and
  neither the producer nor the candidate splits it; -8 if the candidate equals the producer's SBP; per output,
  -1 if it splits the blob on its batch axis;
- copy cost: 0 if equal to the producer's; "infinite" (INT64_MAX) if the candidate is a partial sum; INT32_MAX
  if the producer broadcasts; else the blob's logical bytes.

Inputs split on their batch axis and variables broadcast, so data parallelism falls out of these rules. Batch
axes (OneFlow's ``BatchAxis``) follow the chosen rules too: an input op's blob has its placeholder's batch axis,
and an output keeps a batch axis where some candidate splits every input that has one on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import CompileError
from ..ir import BlobDesc, Job, OpConf
from ..ir.sbp import BROADCAST, SbpParallel, SbpSignature, balanced_split, input_bns, output_bns, split
from ..ops.distribute_ops import joined_axis
from ..ops.registry import get_op_def
from ..ops.sbp_rules import SbpCtx

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
INTERFACE_OPS = frozenset({"input", "output", "return", "variable"})  # their SBP is fixed, never dropped
# consistent ops that take a mirrored blob as its consistent view without a cast: a watch hands its handler the
# pieces joined (OneFlow's LocalMirroredTensor.numpy())
# shape_elem_cnt: the loss instance count of a dynamic mirrored loss (optimizer_ops.py): each device counts its
# piece (S(0) -> P), the boxing sums them
SEES_MIRRORED_CONSISTENTLY = frozenset({"foreign_watch", "shape_elem_cnt"})


class SbpInferError(CompileError):
    """No signature fits an op: hints that exclude every candidate, or a blob too short to split."""


@dataclass(frozen=True)
class SbpCandidate:
    signature: SbpSignature
    order_value: int
    copy_cost: int
    excluded: str | None = None  # why it was not considered (a hint, a blob too short to split)

    def to_dict(self) -> dict:
        return {"signature": {bn: str(s) for bn, s in self.signature.bn_in_op2sbp_parallel.items()},
                "order_value": self.order_value, "copy_cost": self.copy_cost, "excluded": self.excluded}


@dataclass(frozen=True)
class SbpDecision:
    """How one op's signature was chosen: what ``flow.debug.explain_sbp`` shows."""

    op_name: str
    op_type: str
    parallel_num: int
    producer_sbp: Mapping[str, SbpParallel]  # input bn -> its producer's SBP
    batch_axes: Mapping[str, int | None]  # bn -> the blob's batch axis
    hints: Mapping[str, SbpParallel]
    candidates: tuple[SbpCandidate, ...]
    chosen: SbpSignature
    loc: str | None = None
    notes: tuple[str, ...] = field(default=())


def _sig_str(sig: Mapping[str, SbpParallel]) -> str:
    return str(SbpSignature(sig))


def _where(op: OpConf) -> str:
    return f"{op.loc}: " if op.loc else ""


def copy_cost(producer: SbpParallel, candidate: SbpParallel, nbytes: int) -> int:
    """OneFlow's ComputCopyCostBetweenTwoSbpParallel."""
    if producer == candidate:
        return 0
    if candidate.is_partial_sum:
        return INT64_MAX
    if producer.is_broadcast:
        return INT32_MAX
    return nbytes


class JobSbp:
    """The SBP and batch axis of each lbn of one job, filled op by op in topological order."""

    def __init__(self, job: Job, forced: Mapping[str, SbpParallel]) -> None:
        self.job, self.forced = job, forced
        self.sbp: dict[str, SbpParallel] = {}  # lbn -> SBP its producer was given
        self.batch_axis: dict[str, int | None] = {}
        self.signatures: dict[str, SbpSignature] = {}
        self.decisions: dict[str, SbpDecision] = {}
        self.placement = {op.name: op.parallel_conf for op in job.ops}
        mirrored = set(job.mirrored_op_names)
        # mirrored blobs read per device: returned, watched by a tp.ListNumpy handler, or cast to the consistent view
        # (OneFlow's identity of the devices' blobs: S(0), each device's own result, never their sum)
        self.returned = {lbn for op in job.ops if (op.op_type == "return" and op.name in mirrored)
                         or (op.op_type == "foreign_watch" and op.attrs.get("as_list"))
                         or (op.op_type == "identity" and op.name not in mirrored) for lbn in op.input_lbns
                         if lbn.rpartition("/")[0] in mirrored}

    def ctx(self, op: OpConf) -> tuple[SbpCtx, list[tuple[str, str]], list[tuple[str, str]]]:
        op_def = get_op_def(op.op_type)
        ins, outs = input_bns(op.inputs, op_def.system), output_bns(op.outputs)
        # by position, not by blob: an op may read one blob as two arguments (w * w), each with its own SBP
        arg_bns = {arg: tuple(bn for bn, _ in input_bns({arg: lbns}, op_def.system)) for arg, lbns in op.inputs.items()}
        for arg, lbns in op.outputs.items():
            arg_bns.setdefault(arg, tuple(bn for bn, _ in output_bns({arg: lbns})))
        descs = {bn: self.job.blob_descs[lbn] for bn, lbn in (*ins, *outs)}
        hints = dict(self.job.sbp_hints[op.name].bn_in_op2sbp_parallel) if op.name in self.job.sbp_hints else {}
        if op.name in self.forced and op.op_type in INTERFACE_OPS:  # a system job's twin of a user interface op
            hints["out"] = self.forced[op.name]
        producer = {bn: self.sbp.get(lbn, BROADCAST) for bn, lbn in ins}
        if op.name in self.job.mirrored_op_names:
            hints.update(self._mirrored_inputs(op, ins, producer))
        else:
            descs.update(self._check_consistent_inputs(op, ins, outs, producer))
        return SbpCtx(op, arg_bns, descs, hints, producer, op.parallel_conf.parallel_num), ins, outs

    def _check_consistent_inputs(self, op: OpConf, ins: list[tuple[str, str]], outs: list[tuple[str, str]],
                                 producer: Mapping[str, SbpParallel]) -> dict[str, BlobDesc]:
        """A mirrored blob's desc is one device's piece: whole-shaped pieces (B, P) read as a consistent blob of
        that shape; split ones are one blob only through ``flow.cast_to_current_logical_view`` (an identity
        whose output is the pieces concatenated), for which the input's desc becomes that logical one."""
        mirrored, logical = set(self.job.mirrored_op_names), {}
        for bn, lbn in ins:
            name = lbn.rpartition("/")[0]
            n = self.placement[name].parallel_num
            if name not in mirrored or n == 1:
                continue
            piece, sbp = self.job.blob_descs[lbn], producer[bn]
            whole, axis = piece, joined_axis(op, piece)  # a mirrored concat joins its pieces whatever they lie as
            if axis is None and sbp.is_split and self.job.holds_pieces(name):  # else its desc is logical already
                axis = sbp.axis
            if axis is not None:
                shape = list(piece.shape)
                shape[axis] *= n
                whole = BlobDesc(tuple(shape), piece.dtype, piece.is_dynamic)
            cast = op.op_type in ("identity", "distribute_concat") and len(outs) == 1  # pieces joined
            if op.op_type in SEES_MIRRORED_CONSISTENTLY or (cast and self.job.blob_descs[outs[0][1]].shape
                                                             == whole.shape):
                logical[bn] = whole
            elif cast or sbp.is_split:
                raise SbpInferError(
                    f"{_where(op)}consistent op {op.name!r} ({op.op_type}) takes mirrored blob {lbn!r}, whose pieces "
                    f"lie {sbp}: each device holds its own piece of shape {tuple(piece.shape)}, so the consistent "
                    f"blob is {tuple(whole.shape)}"
                    + (f", not {tuple(self.job.blob_descs[outs[0][1]].shape)} as traced (the cast took the pieces "
                       "as split only when they come from per-device data)" if cast else
                       ". Take it with x = flow.cast_to_current_logical_view(x) first, or trace this op under "
                       "flow.scope.mirrored_view() too."))
        return logical

    def _mirrored_inputs(self, op: OpConf, ins: list[tuple[str, str]], producer: Mapping[str, SbpParallel]
                         ) -> dict[str, SbpParallel]:
        """A mirrored op runs on each device's own pieces: a mirrored input lies as its producer made it; a
        consistent one is cloned (B) or split (S(0)) into pieces, and nothing else converts
        (OneFlow's FindOrCreateMirroredLbiFromCompatibleConsistentBlob)."""
        out = {}
        mirrored = set(self.job.mirrored_op_names)
        for bn, lbn in ins:
            sbp = producer[bn]
            if (lbn.rpartition("/")[0] not in mirrored and not (sbp.is_broadcast or sbp == split(0))
                    and op.op_type != "return"):  # a mirrored job's return of any other blob gives it whole
                raise SbpInferError(
                    f"{_where(op)}mirrored op {op.name!r} ({op.op_type}) takes consistent blob {lbn!r}, which lies "
                    f"{sbp}: a mirrored op takes a consistent blob only if it is B (cloned to each device) or S(0) "
                    "(split into per-device pieces); use flow.scope.consistent_view() for this op")
            out[bn] = sbp
        return out

    def infer(self, op: OpConf) -> None:
        ctx, ins, outs = self.ctx(op)
        n = op.parallel_conf.parallel_num
        rule = get_op_def(op.op_type).sbp_rule
        cands = _dedupe([*rule(ctx), ctx.make({arg: BROADCAST for arg in ctx.arg_bns})])
        self._batch_axes(op, ctx, cands, ins, outs)
        axes = {bn: self.batch_axis.get(lbn) for bn, lbn in (*ins, *outs)}
        notes: tuple[str, ...] = ()
        if n == 1:  # OneFlow: S(0) everywhere, nothing else considered
            chosen = {bn: split(0) for bn, _ in (*ins, *outs)}
            scored: tuple[SbpCandidate, ...] = ()
        else:
            scored = tuple(self._score(op, ctx, c, axes, ins, outs, n) for c in cands)
            if op.name in self.job.mirrored_op_names and all((c.excluded or "").startswith("hint") for c in scored):
                per_device = self._per_device(op, ctx, ins, outs)
                scored += (self._score(op, ctx, per_device, axes, ins, outs, n),)
                notes = (f"mirrored: no signature of {op.op_type} takes its inputs as they lie, so each device runs "
                         "it on its own piece (OneFlow's per-device sub-op) and its outputs are those pieces",)
            chosen = self._choose(op, ctx, scored, n)
            if self._returns_partial_pieces(op, chosen, outs):
                per_device = self._per_device(op, ctx, ins, outs)
                scored += (self._score(op, ctx, per_device, axes, ins, outs, n),)
                chosen = per_device
                notes = ("mirrored: its result is returned per device (tp.ListNumpy), so each device's own result "
                         "is its piece (OneFlow's per-device sub-op), not a partial sum added over the devices",)
        sig = SbpSignature(chosen)
        self.signatures[op.name] = sig
        for bn, lbn in outs:
            self.sbp[lbn] = chosen[bn]
        self.decisions[op.name] = SbpDecision(op.name, op.op_type, n, dict(ctx.producer_sbp), axes, dict(ctx.hints),
                                              scored, sig, op.loc, notes)

    def _returns_partial_pieces(self, op: OpConf, chosen: Mapping[str, SbpParallel], outs: list[tuple[str, str]]
                                ) -> bool:
        """A mirrored op made from per-device data whose chosen signature leaves a partial sum (a reduce_sum over
        the batch) that a mirrored return reads: P would add the devices' results on the way out, where OneFlow
        returns each device's own. Per-device pieces change nothing else: mirrored readers take them as they lie,
        and the gradients' partial sums come from their own signatures. An op that read only consistent blobs has
        no per-device shapes to give: ``_per_device`` says so."""
        return (op.name in self.job.mirrored_op_names and op.op_type != "return"
                and any(chosen[bn].is_partial_sum and lbn in self.returned for bn, lbn in outs)
                and all(self.job.blob_descs[lbn].shape for _bn, lbn in outs))

    def _per_device(self, op: OpConf, ctx: SbpCtx, ins: list[tuple[str, str]], outs: list[tuple[str, str]]
                    ) -> dict[str, SbpParallel]:
        """A mirrored op is one sub-op per device (AddAndInferMirroredOp): when none of its signatures takes its
        inputs as they lie, each device still runs it on its own pieces, and its outputs are per-device pieces,
        S(0) unless every input is B (then each device computed the same whole blob). That needs blob descs that
        are one device's piece: an op traced from consistent blobs only was inferred on their logical shapes."""
        whole = all(ctx.producer_sbp[bn].is_broadcast for bn, _ in ins)
        if not whole and not self.job.holds_pieces(op.name):
            raise SbpInferError(self._consistent_only_message(op, ins))
        sig = dict(ctx.producer_sbp)
        for bn, _lbn in outs:
            if not whole and not ctx.descs[bn].shape:
                raise SbpInferError(f"{_where(op)}mirrored op {op.name!r} ({op.op_type}): output {bn!r} has no axis, "
                                    "so the devices' pieces cannot lie side by side (S(0)); give it one axis")
            sig[bn] = BROADCAST if whole else split(0)
        return sig

    def _consistent_only_message(self, op: OpConf, ins: list[tuple[str, str]]) -> str:
        """Why a mirrored op reading only consistent blobs cannot run per device here, and what to write instead.
        OneFlow splits each such blob into per-device pieces (FindOrCreateMirroredLbiFromCompatibleConsistentBlob:
        DistributeSplit for S(0), DistributeClone for B) and infers each sub-op on its piece's physical shape;
        flowlab does too (compiler/mirrored_split.py) where the rows divide evenly, since a blob desc is one
        shape for every device's piece; elsewhere the desc is the logical one, so no device's own result has
        a shape."""
        n = op.parallel_conf.parallel_num
        blobs, fixes = [], []
        for _bn, lbn in ins:
            producer = self.job.producer_of(lbn)
            at = f" at {producer.loc}" if producer.loc else ""
            kind = "mirrored, computed from consistent blobs, " if producer.name in self.job.mirrored_op_names else ""
            blobs.append(f"{lbn!r} ({kind}{self.sbp.get(lbn, BROADCAST)}, made by {producer.name!r}{at})")
        for placeholder, lbn in self._placeholders_behind(ins):
            shape = self.job.blob_descs[lbn].shape
            if self.sbp.get(lbn) == split(0) and shape and shape[0] % n == 0:
                piece = (shape[0] // n, *shape[1:])
                position = (f" (argument {self.job.input_op_names.index(placeholder.name) + 1} of the job "
                            "function)" if placeholder.name in self.job.input_op_names else "")
                fixes.append(f"declare placeholder {placeholder.name!r}{position} as tp.ListNumpy.Placeholder({piece})")
        fix = (f"{'; '.join(fixes)}, and pass a list of {n} arrays for each, one device's rows" if fixes else
               "make the blobs it reads per-device data (tp.ListNumpy placeholders, one device's rows each), so "
               "that the ops before it run per device too")
        return (f"{_where(op)}mirrored op {op.name!r} ({op.op_type}) reads only consistent blobs or mirrored ones "
                f"computed from them, whose shapes are logical: "
                f"{', '.join(blobs)}. OneFlow splits such a blob into per-device pieces (DistributeSplit) and runs "
                f"{op.op_type} on each device's piece; flowlab does so where the blob's rows divide evenly over the "
                f"{n} devices (every piece one shape), but they do not here or the blob is not a consistent S(0) "
                f"one, so it inferred this op's shapes from the logical blobs and no signature of {op.op_type} "
                f"gives each device's own result on {op.parallel_conf}. For "
                f"OneFlow's per-device result, {fix}. For the result over the whole blob, trace this op under "
                "`with flow.scope.consistent_view():` (and return it, or cast it back with "
                "flow.cast_to_current_logical_view).")

    def _placeholders_behind(self, ins: list[tuple[str, str]]) -> list[tuple[OpConf, str]]:
        """The consistent placeholders (input ops) a mirrored op reads, directly or through mirrored ops."""
        found: dict[str, tuple[OpConf, str]] = {}
        todo, seen = [lbn for _bn, lbn in ins], set()
        while todo:
            lbn = todo.pop(0)
            producer = self.job.producer_of(lbn)
            if producer.name in seen:
                continue
            seen.add(producer.name)
            if producer.op_type == "input" and producer.name not in self.job.mirrored_op_names:
                found[producer.name] = (producer, lbn)
            elif producer.name in self.job.mirrored_op_names:
                todo.extend(producer.input_lbns)
        order = {name: i for i, name in enumerate(self.job.input_op_names)}  # the job function's arguments
        return sorted(found.values(), key=lambda p: (order.get(p[0].name, len(order)), p[0].name))

    def _batch_axes(self, op: OpConf, ctx: SbpCtx, cands: list[dict[str, SbpParallel]],
                    ins: list[tuple[str, str]], outs: list[tuple[str, str]]) -> None:
        if op.op_type == "input":
            axis = op.attrs.get("batch_axis", 0)
            self.batch_axis[outs[0][1]] = axis if axis is not None and ctx.descs["out"].shape else None
            return
        with_axis = {bn: axis for bn, lbn in ins if (axis := self.batch_axis.get(lbn)) is not None}
        for _bn, lbn in outs:
            self.batch_axis[lbn] = None
        if not with_axis:
            return
        if op.attrs.get("batch_axis_non_change"):  # transpose's (OneFlow's stopgap): the input's axis number stays
            for _bn, lbn in outs:
                self.batch_axis[lbn] = next(iter(with_axis.values()))
            return
        for cand in cands:  # the first candidate splitting every batched input on its batch axis
            if all(cand[bn] == split(axis) for bn, axis in with_axis.items()):
                for bn, lbn in outs:
                    self.batch_axis[lbn] = cand[bn].axis if cand[bn].is_split else None
                return

    def _score(self, op: OpConf, ctx: SbpCtx, cand: dict[str, SbpParallel], axes: Mapping[str, int | None],
               ins: list[tuple[str, str]], outs: list[tuple[str, str]], n: int) -> SbpCandidate:
        order, cost = 0, 0
        for bn, _lbn in ins:
            producer, mine, axis = ctx.producer_sbp[bn], cand[bn], axes[bn]
            if axis is not None and mine == split(axis):
                order -= 1
            if axis is None and not producer.is_split and not mine.is_split:
                order -= 2
            if mine == producer:
                order -= 8
            desc = ctx.descs[bn]
            # saturating, so "infinite" stays INT64_MAX however many inputs add to it
            cost = min(cost + copy_cost(producer, mine, math.prod(desc.shape) * desc.dtype.itemsize), INT64_MAX)
        for bn, _lbn in outs:
            out_axis = axes[bn]
            if out_axis is not None and cand[bn] == split(out_axis):
                order -= 1
        excluded = None
        unmet = [bn for bn, want in ctx.hints.items() if cand.get(bn) != want]
        if unmet:
            excluded = "hint " + ", ".join(f"{bn}: {ctx.hints[bn]}" for bn in unmet)
        elif op.name not in self.job.mirrored_op_names:  # a mirrored blob desc is one device's piece
            excluded = _unsplittable(ctx, cand, n)
        return SbpCandidate(SbpSignature(cand), order, cost, excluded)

    def _choose(self, op: OpConf, ctx: SbpCtx, scored: tuple[SbpCandidate, ...], n: int) -> dict[str, SbpParallel]:
        hinted = [c for c in scored if not (c.excluded or "").startswith("hint")]
        if not hinted:
            listed = "; ".join(str(c.signature) for c in scored)
            if op.name in self.job.mirrored_op_names:
                raise SbpInferError(
                    f"{_where(op)}mirrored op {op.name!r} ({op.op_type}) on {op.parallel_conf}: no signature of "
                    f"{op.op_type} takes its inputs as they lie per device, {_sig_str(ctx.hints)}. Its signatures: "
                    f"{listed}.")
            raise SbpInferError(
                f"{_where(op)}op {op.name!r} ({op.op_type}) on {op.parallel_conf}: the SBP hints "
                f"{_sig_str(ctx.hints)} are incompatible: no signature of {op.op_type} has them. Its signatures: "
                f"{listed}. Change or drop a with_distribute / distribute= hint on its inputs."
            )
        if op.op_type in INTERFACE_OPS:  # fixed by its conf: a blob too short to split is an error, not a fallback
            best = min(hinted, key=lambda c: (c.order_value, c.copy_cost))
            if best.excluded:
                raise SbpInferError(f"{_where(op)}op {op.name!r} ({op.op_type}) on {op.parallel_conf}: {best.excluded}")
            return dict(best.signature.bn_in_op2sbp_parallel)
        usable = [c for c in hinted if c.excluded is None]
        if not usable:
            raise SbpInferError(f"{_where(op)}op {op.name!r} ({op.op_type}) on {op.parallel_conf}: "
                                f"{hinted[0].excluded}")
        best = min(usable, key=lambda c: (c.order_value, c.copy_cost))  # min keeps the first of equals
        return dict(best.signature.bn_in_op2sbp_parallel)


def _unsplittable(ctx: SbpCtx, cand: Mapping[str, SbpParallel], n: int) -> str | None:
    """OneFlow's CheckOpBlobSplitability: a split axis needs at least one row per device (balanced_split)."""
    for bn, sbp in cand.items():
        shape = ctx.descs[bn].shape
        if not sbp.is_split:
            continue
        if sbp.axis >= len(shape):
            return f"blob {bn!r} of shape {tuple(shape)} has no axis {sbp.axis} to split"
        try:
            balanced_split(shape[sbp.axis], n)  # the physical shapes the plan will give each device
        except ValueError:
            return (f"blob {bn!r} of shape {tuple(shape)} cannot be split on axis {sbp.axis} over {n} devices "
                    f"(it has {shape[sbp.axis]} rows there; each device needs at least one)")
    return None


def _dedupe(cands: list[dict[str, SbpParallel]]) -> list[dict[str, SbpParallel]]:
    seen, out = set(), []
    for c in cands:
        key = tuple(sorted((bn, str(s)) for bn, s in c.items()))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def infer_job_sbp(job: Job, forced: Mapping[str, SbpParallel] | None = None) -> tuple[Job, dict[str, SbpDecision]]:
    state = JobSbp(job, forced or {})
    for op in job.ops:
        state.infer(op)
    return job.replace(sbp_signatures=state.signatures), state.decisions


def infer_sbp_signatures(job: Job, forced: Mapping[str, SbpParallel] | None = None) -> Job:
    """The pass: every op of ``job`` gets its signature in ``job.sbp_signatures``. ``forced``: interface op
    name -> the SBP its twin has in a user job (push, pull and model-io jobs share those blobs per device)."""
    return infer_job_sbp(job, forced)[0]


def interface_sbp(jobs: list[Job]) -> dict[str, SbpParallel]:
    """Interface op name -> the SBP of its blob, from the user jobs (what their system-job twins must have)."""
    out: dict[str, SbpParallel] = {}
    holder: dict[str, str] = {}
    for job in jobs:
        for op in job.ops:
            if op.op_type not in INTERFACE_OPS or op.name not in job.sbp_signatures:
                continue
            sbp = job.sbp_signatures[op.name]["out"]
            if op.name in out and out[op.name] != sbp and op.parallel_conf.parallel_num > 1:
                raise SbpInferError(
                    f"{_where(op)}interface blob {op.name!r} lies {out[op.name]} in job {holder[op.name]!r} but {sbp} "
                    f"in job {job.name!r}; jobs share it per device, so they must agree (give both the same "
                    "distribute= hint)")
            out.setdefault(op.name, sbp)
            holder.setdefault(op.name, job.name)
    return out
