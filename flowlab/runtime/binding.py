"""Building a Runtime's actors: wiring each to its registers' producers and consumers, and binding its kernel
and arrays (op kernels by device and tier, system kernels, boxing and CopyHd copies, the GPU wrappers). Runs once,
when a Runtime is made; the scheduler and the act loop are runtime.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir import COMPUTE_TASK_TYPES
from ..kernels import default_impl, make_kernel
from ..kernels.registry import as_kernel
from .actor import Actor
from .boxing_kernels import boxing_kernel
from .dynamic import boxing_kernel as dynamic_boxing_kernel
from .dynamic import copy_kernel as dynamic_copy_kernel
from .dynamic import has_dynamic_input, op_shape_rules
from .dynamic import op_kernel as dynamic_op_kernel
from .dynamic import push_kernel as dynamic_push_kernel
from .gpu import copy_hd_kernel, device_kernel, host_after_gpu, system_on_gpu
from .main_actors import CaseActor, EsacActor, ReentrantLockActor, WaitAndSendIdsActor
from .system_kernels import system_kernel

if TYPE_CHECKING:
    from .runtime import Runtime

ACTOR_CLASSES: dict[str, type[Actor]] = {
    "WaitAndSendIds": WaitAndSendIdsActor,
    "ReentrantLock": ReentrantLockActor,
    "Case": CaseActor,
    "Esac": EsacActor,
}
WAIT_BUFFER = "GlobalWaitJobId"


def wire(rt: Runtime) -> None:
    """Connect each actor to its registers' consumers and producers, then bind its kernel and arrays."""
    regst_descs = rt.plan.regst_descs
    for actor in rt.actors.values():
        for regst_id in actor.writable:
            actor.consumers[regst_id] = [rt.actors[c] for c in regst_descs[regst_id].consumer_task_ids]
        for regst_id in actor.readable:
            actor.producer_of[regst_id] = rt.actors[regst_descs[regst_id].producer_task_id]
        actor.finish_wiring()
        setup(rt, actor)
    order_host_after_gpu(rt)


def setup(rt: Runtime, actor: Actor) -> None:
    """Bind one actor's kernel (by op, device and kernel tier) and the arrays it reads and writes: fixed arrays
    where its registers do not rotate, else the lbns to look up each act."""
    task = actor.task
    op = task.exec_sequence[0]
    if task.task_type == "CopyHd":
        setup_copy_hd(rt, actor)
        return
    if isinstance(actor, WaitAndSendIdsActor):
        actor.setup(rt.buffer(WAIT_BUFFER), op.attrs["id_list"])
    elif isinstance(actor, ReentrantLockActor):
        actor.setup(op.attrs["lock_id2intersecting_lock_ids"])
    elif isinstance(actor, (CaseActor, EsacActor)):
        actor.setup()
    if task.is_boxing:
        setup_boxing(rt, actor)
        return
    if task.task_type not in COMPUTE_TASK_TYPES and task.task_type not in ("ForeignInput", "ForeignOutput",
                                                                          "CallbackNotify"):
        return
    on_gpu = task.gpu_device is not None
    system = task.system_op
    dynamic = has_dynamic_input(rt, actor) or op.op_type in op_shape_rules().from_data
    if system:  # on a GPU, a copy's header follows the device copy (below)
        made = dynamic_system_kernel(rt, actor) if (dynamic or op.attrs.get("is_dynamic")) and not on_gpu \
            else system_kernel(rt, op, task.parallel_id)
        actor.kernel = None if made is None else as_kernel(made, op=op.op_type, tier="system")
        if any(r.inplace_consumed_regst_desc_id >= 0 for r in task.produced_regst_desc.values()):
            actor.kernel = None  # its output is the bytes it reads (a variable's ref, compiler/inplace.py)
    else:
        descs = rt.plan.regst_descs
        in_descs = [descs[rid].lbi2blob_desc[lbn] if rid >= 0 else desc_of(rt, actor, lbn)
                    for rid, lbn in input_regsts(rt, actor)]
        out_descs = [descs[task.produced_regst_desc["out"].regst_desc_id].lbi2blob_desc[lbn]
                     for lbn in op.output_lbns]
        parallel = (task.parallel_id, task.parallel_num)

        def build(in_descs: list[Any], out_descs: list[Any]) -> Any:
            return (make_kernel(op, in_descs, out_descs, "numba", device="gpu", parallel=parallel) if on_gpu
                    else make_kernel(op, in_descs, out_descs, rt.kernel_impl, parallel=parallel, phase=rt.tier_phase))

        # an op reading a dynamic blob: a kernel per current shape (runtime/dynamic.py)
        actor.kernel = as_kernel(dynamic_op_kernel(rt, actor, input_regsts(rt, actor), in_descs, out_descs, build),
                                 op=op.op_type) if dynamic else build(in_descs, out_descs)
        if actor.kernel.tiered is None:  # not tiered: one tier for good (in the tiered mode: dropout's)
            impl = rt.kernel_impl or default_impl()
            rt.kernel_tiers[task.task_id] = "reference" if impl == "reference" and not on_gpu else "numba"
    ins = input_regsts(rt, actor)
    if any(rid < 0 for rid, _ in ins):  # a task the plan builder recorded no registers for: by blob name
        bind_by_lbn(rt, actor, op.input_lbns, op.output_lbns)
    else:
        outs = [(out_regst(rt, actor, lbn), lbn) for lbn in op.output_lbns]
        bind_by_regst(rt, actor, ins, outs)
    if on_gpu and actor.kernel is not None:
        touches_host = any(not rt.plan.regst_descs[i].mem_case.startswith("device") and
                           not rt.plan.regst_descs[i].is_ctrl for i in (*actor.readable, *actor.writable))
        actor.kernel = (system_on_gpu(rt, actor, actor.kernel) if system
                        else device_kernel(rt, actor, actor.kernel, touches_host))
        if system and dynamic and op.input_lbns and op.output_lbns:
            actor.kernel = actor.kernel.wrap(dynamic_copy_kernel(rt, actor, actor.kernel))


def dynamic_system_kernel(rt: Runtime, actor: Actor) -> Any:
    """A system op's kernel where a dynamic blob passes: the push writes the pieces' shapes into the header, a pull
    or a watch hands over the current pieces, a copy carries the header along (runtime/dynamic.py)."""
    op, task = actor.task.exec_sequence[0], actor.task
    if op.op_type == "foreign_input":
        return dynamic_push_kernel(rt, actor, op)
    if op.op_type in ("foreign_output", "foreign_watch"):
        (lbn,) = op.input_lbns
        slot = next(q for i, q in actor.readable.items() if lbn in rt.plan.regst_descs[i].lbi2blob_desc)
        return system_kernel(rt, op, task.parallel_id, header=lambda: slot[0].header.get(lbn))
    kernel = system_kernel(rt, op, task.parallel_id)
    if kernel is None or not op.input_lbns:
        return kernel
    return dynamic_copy_kernel(rt, actor, kernel)


def input_regsts(rt: Runtime, actor: Actor) -> list[tuple[int, str]]:
    """(register, blob) for each input of the actor's op, from the plan's per-argument record
    (TaskProto.input_regst_ids): one blob read as two arguments in two SBPs (``x @ x.T`` on S(0), one side boxed
    to B) comes from two registers. Register -1 where the plan recorded none (a hand-made plan)."""
    task = actor.task
    lbns = task.exec_sequence[0].input_lbns
    rids = task.input_regst_ids
    if len(rids) != len(lbns) or any(rid not in actor.readable for rid in rids):
        return [(-1, lbn) for lbn in lbns]
    return list(zip(rids, lbns))


def out_regst(rt: Runtime, actor: Actor, lbn: str) -> int:
    for regst_id in actor.writable:
        if lbn in rt.plan.regst_descs[regst_id].lbi2blob_desc:
            return regst_id
    raise KeyError(f"actor {actor.name} produces no register holding {lbn}")


def bind_by_regst(rt: Runtime, actor: Actor, ins: list[tuple[int, str]], outs: list[tuple[int, str]]) -> None:
    """Fixed arrays where no register rotates, else the (register, blob) pairs to look up each act."""
    if any(len(rt.regsts[rid]) > 1 for rid, _ in (*ins, *outs)):
        actor.io_lbns = (tuple(ins), tuple(outs))
    else:
        actor.in_arrays = [rt.regsts[rid][0].blobs[lbn] for rid, lbn in ins]
        actor.out_arrays = [rt.regsts[rid][0].blobs[lbn] for rid, lbn in outs]


def bind_by_lbn(rt: Runtime, actor: Actor, in_lbns: tuple[str, ...], out_lbns: tuple[str, ...]) -> None:
    consumed = [rt.regsts[i] for i in actor.readable]
    produced = [rt.regsts[i] for i in actor.writable]
    if any(len(r) > 1 for r in consumed + produced):  # registers rotate: look arrays up each act
        actor.io_lbns = (in_lbns, out_lbns)
    else:
        blobs = {lbn: a for regs in consumed + produced for lbn, a in regs[0].blobs.items()}
        actor.in_arrays = [blobs[lbn] for lbn in in_lbns]
        actor.out_arrays = [blobs[lbn] for lbn in out_lbns]


def order_host_after_gpu(rt: Runtime) -> None:
    """A host act whose registers meet a GPU task waits for the GPU work pending on them (gpu.host_after_gpu):
    GPU acts end with their copies in flight."""
    near_gpu = {i for a in rt.actors.values() if a.task.gpu_device is not None
                for i in (*a.readable, *a.writable)}
    if not near_gpu:
        return
    for actor in rt.actors.values():
        if actor.kernel is not None and actor.task.gpu_device is None and \
                any(i in near_gpu for i in (*actor.readable, *actor.writable)):
            actor.kernel = host_after_gpu(actor, actor.kernel)


def setup_copy_hd(rt: Runtime, actor: Actor) -> None:
    """A CopyHd task copies every blob of the register it reads into its own, on its H2D or D2H stream."""
    task = actor.task
    (src,) = task.consumed_regst_desc_id["copy_in"]
    dst = task.produced_regst_desc["copy_out"].regst_desc_id
    lbns = task.exec_sequence[0].input_lbns
    if len(rt.regsts[src]) > 1 or len(rt.regsts[dst]) > 1:  # registers rotate: look arrays up each act
        actor.io_lbns = (lbns, lbns)
    else:
        actor.in_arrays = [rt.regsts[src][0].blobs[lbn] for lbn in lbns]
        actor.out_arrays = [rt.regsts[dst][0].blobs[lbn] for lbn in lbns]
    actor.kernel = copy_hd_kernel(rt, actor)


def setup_boxing(rt: Runtime, actor: Actor) -> None:
    """A boxing task reads the same blob from several registers (``in_0``, ``in_1``, ...), so its arrays are
    bound by consumed register, not by blob name; where one rotates (a SliceBoxing ``out`` has two, as in
    OneFlow) they are looked up each act by (register, blob)."""
    task = actor.task
    op = task.exec_sequence[0]
    ins = [(rid, lbn) for arg, lbns in op.inputs.items() for rid in task.consumed_regst_desc_id[arg]
           for lbn in lbns]
    out_id = task.produced_regst_desc["out"].regst_desc_id
    outs = [(out_id, lbn) for lbn in op.output_lbns]
    actor.kernel = boxing_kernel(rt, task)
    if has_dynamic_input(rt, actor):
        actor.kernel = actor.kernel.wrap(dynamic_boxing_kernel(rt, actor, actor.kernel))
    bind_by_regst(rt, actor, ins, outs)


def desc_of(rt: Runtime, actor: Actor, lbn: str) -> Any:
    for regst_id in actor.readable:
        desc = rt.plan.regst_descs[regst_id]
        if lbn in desc.lbi2blob_desc:
            return desc.lbi2blob_desc[lbn]
    raise KeyError(f"actor {actor.name} consumes no register holding {lbn}")
