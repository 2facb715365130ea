"""SBP candidate rules (OneFlow's ``GetSbpSignatures`` / user ops' ``SetGetSbpFn``), declared beside each op.

A rule sees an ``SbpCtx`` (the op, the logical blob desc of each of its blobs by ``bn_in_op``) and returns the
op's candidate signatures, ``bn_in_op -> SbpParallel`` for every blob of the op. Inference always adds the
all-broadcast signature (OneFlow's GetSbpSignaturesIf), so a rule returns ``[]`` for "broadcast only". Each
candidate must be exact: running the op's kernel on the physical pieces it names gives the physical pieces of
the outputs it names (a partial sum only where the kernel is linear in that input).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..ir import BlobDesc, OpConf
from ..ir.sbp import BROADCAST, PARTIAL_SUM, SbpParallel, split

Signature = dict[str, SbpParallel]


@dataclass(frozen=True)
class SbpCtx:
    op: OpConf
    arg_bns: Mapping[str, tuple[str, ...]]  # arg (input or output) -> its bns, in order
    descs: Mapping[str, BlobDesc]  # bn -> logical blob desc
    hints: Mapping[str, SbpParallel] = field(default_factory=dict)  # bn -> the SBP a hint asks for
    producer_sbp: Mapping[str, SbpParallel] = field(default_factory=dict)  # input bn -> its producer's SBP
    parallel_num: int = 1  # the devices of the op's placement (a rule whose blobs depend on it checks it)

    @property
    def attrs(self) -> Mapping:
        return self.op.attrs

    def bns(self, arg: str) -> tuple[str, ...]:
        return self.arg_bns.get(arg, ())

    def shape(self, arg: str, index: int = 0) -> tuple[int, ...]:
        return self.descs[self.arg_bns[arg][index]].shape

    def ndim(self, arg: str, index: int = 0) -> int:
        return len(self.shape(arg, index))

    def make(self, per_arg: Mapping[str, SbpParallel]) -> Signature:
        """One signature: every bn of each named arg gets that arg's SBP; every arg must be named."""
        missing = [arg for arg in self.arg_bns if arg not in per_arg]
        if missing:
            raise ValueError(f"SBP rule of {self.op.op_type!r} names no SBP for {missing}")
        return {bn: per_arg[arg] for arg, bns in self.arg_bns.items() for bn in bns}


SbpRule = Callable[[SbpCtx], list[Signature]]


def _axes(ctx: SbpCtx, ref: str) -> range:
    return range(ctx.ndim(ref)) if ctx.bns(ref) else range(0)


# -- generic rules ------------------------------------------------------------------------------------------
def broadcast_only(ctx: SbpCtx) -> list[Signature]:
    """No candidate but all-broadcast (OneFlow's DefaultBroadcastToBroadcast)."""
    return []


def elementwise(ref: str, partial: bool = False, keep_last: bool = True, broadcast: tuple[str, ...] = ()
                ) -> SbpRule:
    """Every arg split on the same axis, for each axis of ``ref`` (SplitForEachAxis); ``keep_last=False`` skips
    the last axis (ops that reduce over it, like softmax); ``broadcast`` args stay B; ``partial`` adds P -> P
    for ops linear in their inputs."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        axes = _axes(ctx, ref)
        if not keep_last:
            axes = axes[:-1]
        sigs = [ctx.make({arg: BROADCAST if arg in broadcast else split(a) for arg in ctx.arg_bns}) for a in axes]
        if partial:
            sigs.append(ctx.make({arg: BROADCAST if arg in broadcast else PARTIAL_SUM for arg in ctx.arg_bns}))
        return sigs

    return rule


def batch_and(axes: tuple[int, ...], broadcast: tuple[str, ...] = (), partial_out: tuple[str, ...] = ()) -> SbpRule:
    """Split on the given axes of the data args (conv and pooling: N and for pooling C), ``broadcast`` args B;
    ``partial_out`` args (a filter's gradient) P instead of split."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        return [ctx.make({arg: BROADCAST if arg in broadcast else PARTIAL_SUM if arg in partial_out else split(a)
                          for arg in ctx.arg_bns}) for a in axes]

    return rule


def pass_through(ctx: SbpCtx) -> list[Signature]:
    """System sinks and ticks: each input as its producer has it (no boxing), outputs B."""
    sig = {bn: ctx.producer_sbp.get(bn, BROADCAST) for arg in ctx.op.inputs for bn in ctx.bns(arg)}
    sig.update({bn: BROADCAST for arg in ctx.op.outputs for bn in ctx.bns(arg)})
    return [sig]


def model_io_rule(ctx: SbpCtx) -> list[Signature]:
    """model_init/load/save: the variable (``ref``) as it lies, in place; the checkpoint path whole (B)."""
    sig = {bn: BROADCAST for bn in ctx.bns("path")}
    sig.update({bn: ctx.producer_sbp.get(bn, BROADCAST) for bn in ctx.bns("ref")})
    return [sig]


# -- interface ops ------------------------------------------------------------------------------------------
def input_rule(ctx: SbpCtx) -> list[Signature]:
    """Input: S(split_axis) where the placeholder's split axis is its batch axis; B without one (OneFlow's
    FixedTensorDef.SetBatchAxisAndSplitAxis)."""
    axis = ctx.attrs.get("batch_axis", 0)
    return [ctx.make({"out": split(axis)})] if axis is not None and ctx.ndim("out") > axis else []


def variable_rule(ctx: SbpCtx) -> list[Signature]:
    """Variable: its ``distribute`` (split_axis) or B, fixed (variable_op.cpp)."""
    return [ctx.make({"out": ctx.hints.get("out", BROADCAST)})]


def return_rule(ctx: SbpCtx) -> list[Signature]:
    """Return copies its input's SBP, except that a partial sum is reduced to B (return_op.cpp)."""
    sbp = ctx.producer_sbp.get(ctx.bns("in")[0], BROADCAST)
    sbp = BROADCAST if sbp.is_partial_sum else sbp
    return [ctx.make({"in": sbp, "out": sbp})]


def output_rule(ctx: SbpCtx) -> list[Signature]:
    """A push job's output op takes whatever the user job's input op of its name has (forced by a hint)."""
    return [ctx.make({"in": split(a), "out": split(a)}) for a in _axes(ctx, "out")]


# -- math -----------------------------------------------------------------------------------------------------
def broadcast_binary(partial: str) -> SbpRule:
    """Broadcasting binary ops: per output axis, each input split there or, where it broadcasts, B.
    ``partial``: "both" (add, sub: P+P -> P), "x" (mul, div: P x B -> P), "xy" (mul: also B x P -> P)."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        out_nd, sigs = ctx.ndim("z"), []
        for a in range(out_nd):
            per: dict[str, SbpParallel] = {"z": split(a)}
            for arg in ("x", "y"):
                shape, offset = ctx.shape(arg), out_nd - ctx.ndim(arg)
                per[arg] = split(a - offset) if a >= offset and shape[a - offset] != 1 else BROADCAST
            if per["x"].is_split or per["y"].is_split:
                sigs.append(ctx.make(per))
        if partial == "both":
            sigs.append(ctx.make({"x": PARTIAL_SUM, "y": PARTIAL_SUM, "z": PARTIAL_SUM}))
        if partial in ("x", "xy"):
            sigs.append(ctx.make({"x": PARTIAL_SUM, "y": BROADCAST, "z": PARTIAL_SUM}))
        if partial == "xy":
            sigs.append(ctx.make({"x": BROADCAST, "y": PARTIAL_SUM, "z": PARTIAL_SUM}))
        return sigs

    return rule


def matmul_rule(ctx: SbpCtx) -> list[Signature]:
    """matmul_op.cpp: [a S(m), b B -> S], [a B, b S(n) -> S], [a S(k), b S(k) -> P], [P, B -> P], [B, P -> P];
    batch axes of a batched matmul split all three."""
    nd = ctx.ndim("a")
    ta, tb = ctx.attrs["transpose_a"], ctx.attrs["transpose_b"]
    m_a, k_a = (nd - 1, nd - 2) if ta else (nd - 2, nd - 1)
    k_b, n_b = (nd - 1, nd - 2) if tb else (nd - 2, nd - 1)
    sigs = [ctx.make({"a": split(i), "b": split(i), "out": split(i)}) for i in range(nd - 2)]
    sigs += [
        ctx.make({"a": split(m_a), "b": BROADCAST, "out": split(nd - 2)}),
        ctx.make({"a": BROADCAST, "b": split(n_b), "out": split(nd - 1)}),
        ctx.make({"a": split(k_a), "b": split(k_b), "out": PARTIAL_SUM}),
        ctx.make({"a": PARTIAL_SUM, "b": BROADCAST, "out": PARTIAL_SUM}),
        ctx.make({"a": BROADCAST, "b": PARTIAL_SUM, "out": PARTIAL_SUM}),
    ]
    return sigs


def bias_add_rule(ctx: SbpCtx) -> list[Signature]:
    """bias_add_op.cpp: a S(i != axis) + b B -> S(i); a S(axis) + b S(0) -> S(axis)."""
    nd = ctx.ndim("a")
    axis = ctx.attrs["axis"] % nd
    return [ctx.make({"a": split(i), "b": split(0) if i == axis else BROADCAST, "out": split(i)}) for i in range(nd)]


def _reduced_axes(axis: object, nd: int) -> set[int]:
    if axis is None:
        return set(range(nd))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return {int(a) % nd for a in axes}  # type: ignore[call-overload]


def reduce_rule(sum_like: bool) -> SbpRule:
    """Reductions: a kept axis splits through; a reduced axis split gives a partial sum (sum only: a max or a
    mean of slices is not a sum of slices); reduce_sum is linear, so P -> P."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        nd = ctx.ndim("input_tensor")
        reduced, keep = _reduced_axes(ctx.attrs["axis"], nd), ctx.attrs["keepdims"]
        sigs = []
        for a in range(nd):
            if a not in reduced:
                out_axis = a if keep else a - sum(1 for r in reduced if r < a)
                sigs.append(ctx.make({"input_tensor": split(a), "output_tensor": split(out_axis)}))
            elif sum_like:
                sigs.append(ctx.make({"input_tensor": split(a), "output_tensor": PARTIAL_SUM}))
        if sum_like:
            sigs.append(ctx.make({"input_tensor": PARTIAL_SUM, "output_tensor": PARTIAL_SUM}))
        return sigs

    return rule


def reduce_max_grad_rule(ctx: SbpCtx) -> list[Signature]:
    """reduce_max_grad (x, y, dy -> dx): split through the kept axes."""
    nd = ctx.ndim("x")
    reduced, keep = _reduced_axes(ctx.attrs["axis"], nd), ctx.attrs["keepdims"]
    sigs = []
    for a in range(nd):
        if a not in reduced:
            b = a if keep else a - sum(1 for r in reduced if r < a)
            sigs.append(ctx.make({"x": split(a), "y": split(b), "dy": split(b), "dx": split(a)}))
    return sigs


def _aligned(big: tuple[int, ...], small: tuple[int, ...]) -> list[int | None]:
    """For each axis of ``big``, the matching axis of ``small`` (numpy broadcasting, right-aligned), or None
    where ``small`` has no such axis or size 1 there."""
    offset = len(big) - len(small)
    return [a - offset if a >= offset and small[a - offset] == big[a] else None for a in range(len(big))]


def reduce_sum_like_rule(ctx: SbpCtx) -> list[Signature]:
    """Sums ``x`` down to ``like``'s shape: an axis kept splits through, an axis summed away gives P."""
    sigs = []
    for a, b in enumerate(_aligned(ctx.shape("x"), ctx.shape("like"))):
        if b is None:
            sigs.append(ctx.make({"x": split(a), "like": BROADCAST, "y": PARTIAL_SUM}))
        else:
            sigs.append(ctx.make({"x": split(a), "like": split(b), "y": split(b)}))
    sigs.append(ctx.make({"x": PARTIAL_SUM, "like": BROADCAST, "y": PARTIAL_SUM}))
    return sigs


def broadcast_like_rule(ctx: SbpCtx) -> list[Signature]:
    """Broadcasts ``x`` to ``like``'s shape: an axis ``x`` has splits both; one it lacks splits ``like`` only."""
    x, like, axes = ctx.shape("x"), ctx.shape("like"), ctx.attrs["broadcast_axes"]
    if axes is not None and len(x) == len(like) - len(axes):  # x is like with ``axes`` dropped
        kept = [a for a in range(len(like)) if a not in {b % len(like) for b in axes}]
        mapping: list[int | None] = [kept.index(a) if a in kept else None for a in range(len(like))]
    else:
        mapping = _aligned(like, x)
    return [ctx.make({"x": BROADCAST if b is None else split(b), "like": split(a), "y": split(a)})
            for a, b in enumerate(mapping)]


# -- layout ---------------------------------------------------------------------------------------------------
def reshape_rule(ctx: SbpCtx) -> list[Signature]:
    """An input axis maps to an output axis with the same size and the same product of sizes before it: the
    balanced pieces of both are the same rows (reshape_user_op_util.cpp, for the unsqueezed case)."""
    ins, outs, sigs = ctx.shape("in"), ctx.shape("out"), []
    for a in range(len(ins)):
        for b in range(len(outs)):
            if ins[a] == outs[b] and math.prod(ins[:a]) == math.prod(outs[:b]):
                sigs.append(ctx.make({"in": split(a), "out": split(b)}))
                break
    sigs.append(ctx.make({"in": PARTIAL_SUM, "out": PARTIAL_SUM}))
    return sigs


def transpose_rule(ctx: SbpCtx) -> list[Signature]:
    perm = ctx.attrs["perm"]
    sigs = [ctx.make({"input": split(perm[b]), "output": split(b)}) for b in range(len(perm))]
    return [*sigs, ctx.make({"input": PARTIAL_SUM, "output": PARTIAL_SUM})]


def off_axis(ref: str, axis_attr: str = "axis", partial: bool = False) -> SbpRule:
    """Split on every axis but the one the op works along (concat, split_like, slice-free ops)."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        axis = ctx.attrs[axis_attr] % ctx.ndim(ref)
        sigs = [ctx.make({arg: split(a) for arg in ctx.arg_bns}) for a in _axes(ctx, ref) if a != axis]
        if partial:
            sigs.append(ctx.make({arg: PARTIAL_SUM for arg in ctx.arg_bns}))
        return sigs

    return rule


def slice_rule(data: str) -> SbpRule:
    """slice / slice_grad: split on the axes taken whole (start 0, to the end, step 1)."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        shape = ctx.shape(data)
        whole = [a for a, (start, stop, step) in enumerate(ctx.attrs["slice_tup_list"])
                 if slice(start, stop, step).indices(shape[a]) == (0, shape[a], 1)]
        sigs = [ctx.make({arg: split(a) for arg in ctx.arg_bns}) for a in whole]
        return [*sigs, ctx.make({arg: PARTIAL_SUM for arg in ctx.arg_bns})]

    return rule


def gather_rule(ctx: SbpCtx) -> list[Signature]:
    """gather_op.cpp: indices split with ``in`` B; ``in`` split off the gather axis with indices B; ``in`` split on
    the gather axis with indices B gives P (each device its rows, zeros for the indices of other devices' rows)."""
    ind_nd, in_nd = ctx.ndim("indices"), ctx.ndim("in")
    axis = ctx.attrs["axis"] % in_nd  # the op takes a negative axis, as NumPy does
    sigs = [ctx.make({"in": BROADCAST, "indices": split(i), "out": split(axis + i)}) for i in range(ind_nd)]
    if ctx.attrs.get("logical_axis_size") is not None:  # the kernel needs it to find its rows
        sigs.append(ctx.make({"in": split(axis), "indices": BROADCAST, "out": PARTIAL_SUM}))
    for a in range(in_nd):
        if a != axis:
            out_axis = a if a < axis else a + ind_nd - 1
            sigs.append(ctx.make({"in": split(a), "indices": BROADCAST, "out": split(out_axis)}))
    return sigs


def segment_sum_rule(ctx: SbpCtx) -> list[Signature]:
    """unsorted_segment_sum_like: data and ids split together along the ids' axes give a partial sum; data
    split past them splits the output alike."""
    ids_nd, data_nd = ctx.ndim("segment_ids"), ctx.ndim("data")
    axis = ctx.attrs["axis"] % data_nd  # the op takes a negative axis, as NumPy does
    sigs = [ctx.make({"data": split(axis + i), "segment_ids": split(i), "like": BROADCAST, "out": PARTIAL_SUM})
            for i in range(ids_nd)]
    for a in range(data_nd):
        if a < axis or a >= axis + ids_nd:
            out_axis = a if a < axis else a - ids_nd + 1
            sigs.append(ctx.make({"data": split(a), "segment_ids": BROADCAST, "like": split(out_axis),
                                  "out": split(out_axis)}))
    if ctx.attrs.get("logical_axis_size") is not None:  # the kernel needs it to find its segments' offset
        # unsorted_segment_sum_op.cpp: data and ids B, like and out split on the segment axis (model parallel)
        sigs.append(ctx.make({"data": BROADCAST, "segment_ids": BROADCAST, "like": split(axis), "out": split(axis)}))
    return sigs


class PerDeviceSignature(dict):
    """A candidate that is *not* exact on purpose: each device computes on its own piece and what it produces is
    that device's answer, not a piece of the logical one. OneFlow's training normalization is the one such op
    (batch statistics over each device's rows); the exactness test checks these against the per-device semantics
    instead of the logical kernel."""


def normalization_rule(ctx: SbpCtx) -> list[Signature]:
    """normalization_op.cpp: x and y S(0), everything else B. In training each device normalizes its slice of the
    batch with that slice's statistics, writes them to ``mean``/``inv_variance`` (labelled B though each device
    has its own) and updates its copy of the moving statistics with them, so the copies diverge as in OneFlow.
    In inference the moving statistics normalize, which is exact on any split off the channel axis."""
    nd, axis = ctx.ndim("x"), ctx.attrs["axis"] % ctx.ndim("x")
    data = {"x", "y"}
    if ctx.attrs["training"]:
        return [PerDeviceSignature(ctx.make({arg: split(0) if arg in data else BROADCAST for arg in ctx.arg_bns}))]
    return [ctx.make({arg: split(a) if arg in data else BROADCAST for arg in ctx.arg_bns})
            for a in range(nd) if a != axis]


def normalization_grad_rule(ctx: SbpCtx) -> list[Signature]:
    """normalization_grad (OneFlow's GetSbpFn): x, dy, dx S(0); mean, inv_variance, gamma B; gamma_diff and
    beta_diff P (sums over rows, so each device's sum is an addend). dx uses each device's row count and sums:
    the gradient of its per-device forward, so per device as the forward is."""
    data, partial = {"x", "dy", "dx"}, {"gamma_diff", "beta_diff"}
    return [PerDeviceSignature(ctx.make({arg: split(0) if arg in data else PARTIAL_SUM if arg in partial
                                         else BROADCAST for arg in ctx.arg_bns}))]


def optimizer_rule(ctx: SbpCtx) -> list[Signature]:
    """Update ops: the model, its gradient and its state lie alike, split on any axis or B; the learning rate
    and train step are B (sgd_optm.cpp / SplitForEachAxis on model and model_diff)."""
    scalars = {"learning_rate", "train_step"}
    return [ctx.make({arg: BROADCAST if arg in scalars else split(a) for arg in ctx.arg_bns})
            for a in _axes(ctx, "model")]
