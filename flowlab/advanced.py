"""``flow.advanced``: OneFlow's distribute ops (``python/advanced/distribute_ops.py``), a consistent blob to one
blob per device of the current placement and back; ``flowlab/ops/distribute_ops.py`` has the ops."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import OpInferError
from .frontend import scope
from .frontend.blob import LazyBlob
from .frontend.builder import current_builder
from .frontend.location import user_location
from .ir import OpConf, ParallelConf
from .ops._common import require_blob
from .ops.distribute_ops import ONE_DEVICE_OUTPUTS, add_distribute_op


def distribute_clone(x: LazyBlob, name: str | None = None) -> tuple[LazyBlob, ...]:
    """``x`` (B) as one blob per device of the current placement, each the whole blob on that device alone."""
    require_blob(x, "the input of distribute_clone")
    return tuple(add_distribute_op("distribute_clone", [x], _attrs(), _name("DistributeClone_", name)))


def distribute_split(x: LazyBlob, axis: int = 0, name: str | None = None) -> tuple[LazyBlob, ...]:
    """``x`` (S(axis)) as one blob per device of the current placement: device i's balanced slice, on it alone."""
    require_blob(x, "the input of distribute_split")
    return tuple(add_distribute_op("distribute_split", [x], _attrs(axis), _name("DistributeSplit_", name)))


def distribute_concat(xs: Sequence[LazyBlob], axis: int = 0, name: str | None = None) -> LazyBlob:
    """One blob per device of the current placement (blob i to device i), joined on ``axis``: S(axis)."""
    xs = _pieces_in_their_slots("distribute_concat", xs)
    return add_distribute_op("distribute_concat", xs, _attrs(axis), _name("DistributeConcat_", name))[0]


def distribute_add(xs: Sequence[LazyBlob], name: str | None = None) -> LazyBlob:
    """One blob per device of the current placement (blob i to device i), summed: P."""
    xs = _pieces_in_their_slots("distribute_add", xs)
    return add_distribute_op("distribute_add", xs, _attrs(), _name("DistributeAdd_", name))[0]


def _attrs(axis: int = 0) -> dict:
    return {"axis": axis, "parallel_num": _placement().parallel_num}


def _placement() -> ParallelConf:
    return scope.current_placement(current_builder().default_placement)


def _name(prefix: str, name: str | None) -> str:
    """OneFlow's ``id_util.UniqueStr(prefix)`` where no name is given."""
    if name is not None:
        return name
    builder, i = current_builder(), 0
    while builder.has_op(f"{prefix}{i}"):
        i += 1
    return f"{prefix}{i}"


def _pieces_in_their_slots(api: str, xs: Sequence[LazyBlob]) -> list[LazyBlob]:
    """One blob per device of the current placement, each on one device (OneFlow asserts the count and each blob's
    single device, ``_SoleConsistentLbn``). Blob i is read on device i (DistributeConcatOp's parallel signature):
    one made on another device is copied there, as OneFlow's boxing copies it to its slot; here a visible
    identity op on device i, which flowlab's boxing feeds."""
    placement, where = _placement(), user_location()
    at = f"{where}: " if where else ""
    if isinstance(xs, LazyBlob) or not isinstance(xs, (list, tuple)):
        raise TypeError(f"{at}flow.advanced.{api} takes a list of blobs, one per device; got {type(xs).__name__}")
    for i, x in enumerate(xs):
        require_blob(x, f"blob {i} of {api}'s list")
    if len(xs) != placement.parallel_num:
        raise OpInferError(f"{at}flow.advanced.{api} takes one blob per device of the placement {placement} "
                           f"({placement.parallel_num}); got a list of {len(xs)}")
    from .ops.array_ops import identity

    ops = {op.name: op for op in current_builder().ops}
    slotted = []
    for i, (x, (machine, device)) in enumerate(zip(xs, placement.devices)):
        own = _blob_placement(ops[x.op_name], x.lbn)
        if own.parallel_num != 1:
            raise OpInferError(
                f"{at}flow.advanced.{api}: blob {i} ({x.lbn!r}) must lie on one device, as distribute_split's and "
                f"distribute_clone's outputs do (or an op under flow.scope.placement(\"{placement.device_tag}\", "
                f"\"{machine}:{device}\")); it lies on {own}")
        if own.devices != ((machine, device),) or own.device_tag != placement.device_tag:
            with scope.placement(placement.device_tag, f"{machine}:{device}"):
                x = identity(x, name=f"{_name(f'{api}_slot{i}_', None)}")
        slotted.append(x)
    return slotted


def _blob_placement(producer: OpConf, lbn: str) -> ParallelConf:
    """Where a blob lies: its producer's placement, or one device of it for a distribute op's ``out_i``."""
    conf = producer.parallel_conf
    if producer.op_type in ONE_DEVICE_OUTPUTS and not producer.attrs.get("mirrored") and conf.parallel_num > 1:
        machine, device = conf.devices[producer.output_lbns.index(lbn)]
        return ParallelConf(conf.device_tag, (f"{machine}:{device}",))
    return conf
