"""Kernels of the system ops that touch the runtime: interface copies, foreign I/O, notify, model I/O."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import OpConf
from ..ir.mirrored import MirroredList
from ..kernels.registry import External, FusedCall, Kernel, KernelFn, fusable

if TYPE_CHECKING:
    from .runtime import Runtime

NO_KERNEL = frozenset({"input", "variable", "sink_tick", "source_tick", "tick"})  # memory is already right
DISTRIBUTE_OPS = frozenset({"distribute_split", "distribute_clone", "distribute_concat", "distribute_add"})
WATCH_BUFFER = "ForeignWatch"  # watched blobs, for the session to hand to their handlers after a call


def system_kernel(rt: Runtime, op: OpConf, parallel_id: int = 0,
                  header: Callable[[], Any] | None = None) -> Kernel | KernelFn | None:
    """The kernel of a system op, or None when it has nothing to compute. ``parallel_id``: which device of the
    op's placement the task runs on. ``header``: for a pull or a watch of a dynamic blob, what reads its current
    shape (runtime/dynamic.py); they hand over its current pieces."""
    kind = op.op_type
    if kind in NO_KERNEL:
        return None
    if kind in ("output", "return") or kind in DISTRIBUTE_OPS:  # a distribute op's task copies its device's blob
        return _COPY
    if kind == "foreign_input":
        buffer = rt.buffer(op.attrs["ofblob_buffer_name"])

        def foreign_input(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            array, out = buffer.popleft().push_array, outs[0]
            if type(array) is np.ndarray and array.dtype is out.dtype and array.shape == out.shape:
                out[...] = array  # the common push, exactly the blob's shape and dtype: a third of copyto's time
                return
            np.copyto(out, _pushed(array).reshape(out.shape), casting="no")

        return fusable(foreign_input, lambda ins, outs: _fused_push(buffer, outs[0]))
    if kind == "foreign_output":
        buffer = rt.buffer(op.attrs["ofblob_buffer_name"])

        parts, axis = op.attrs.get("mirrored_parts", 0), op.attrs.get("mirrored_axis", 0)

        def deliver(array: np.ndarray, split: bool = True) -> None:  # a mirrored return: its devices' blobs
            instance = buffer.popleft()
            instance.pulled = pulled = mirrored_list(array, parts, axis) if parts and split else array
            if instance.on_pull is not None:  # instance.pull()
                instance.on_pull(pulled)

        if header is not None:
            from .dynamic import pulled

            def foreign_output_dynamic(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
                current = header()  # None or the static shape: the blob is whole, pulled as a static one is
                if current is None or current == ins[0].shape:
                    deliver(ins[0].copy())
                else:
                    deliver(pulled(ins[0], current, parts), split=False)

            return foreign_output_dynamic

        def foreign_output(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            deliver(ins[0].copy())

        return fusable(foreign_output, lambda ins, outs: _fused_copy_out(ins[0], deliver, buffer))
    if kind == "foreign_watch":
        if parallel_id > 0:  # it watches the whole blob (B) on every device: the first device hands it over
            return None
        buffer, uuid = rt.buffer(WATCH_BUFFER), op.attrs["handler_uuid"]
        parts, axis = op.attrs.get("mirrored_parts", 0), op.attrs.get("mirrored_axis", 0)

        def hand_over(array: np.ndarray) -> None:  # a tp.ListNumpy handler gets the blob per device
            buffer.append((uuid, mirrored_list(array, parts, axis) if parts else array))

        if header is not None:
            from .dynamic import pulled

            def foreign_watch_dynamic(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
                current = header()
                if current is None or current == ins[0].shape:
                    hand_over(ins[0].copy())
                else:
                    buffer.append((uuid, pulled(ins[0], current, parts)))

            return foreign_watch_dynamic

        def foreign_watch(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            hand_over(ins[0].copy())  # handlers run after the run, outside any act

        return fusable(foreign_watch, lambda ins, outs: _fused_copy_out(ins[0], hand_over))
    if kind == "callback_notify":
        notifiers = rt._notifiers

        def callback_notify(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            # rt.notify_section_done, inlined (three a call); item(0): int(ins[0][0]) makes a NumPy scalar first
            section = ins[0].item(0)
            (notifiers.get(section) or rt.notifier(section)).popleft().finished = True

        return Kernel(callback_notify, notifies=True)  # a replay notifies directly
    if kind == "model_init":
        from ..kernels.initializers import initialize

        conf, seed = op.attrs["initializer"], op.attrs["random_seed"]
        part = _ref_part(op)

        def model_init(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            ref = ins[0]
            if part is None:
                ref[...] = initialize(conf, ref.shape, _dtype_of(ref), seed)
            else:  # a split variable: draw the logical value (the same on every device count), keep this slice
                ref[...] = initialize(conf, part[0], _dtype_of(ref), seed)[part[1]]

        return model_init
    if kind == "model_load":
        return _model_load_kernel(op.attrs["variable_name"], op.attrs["initializer"], op.attrs["random_seed"],
                                  _ref_part(op))
    if kind == "model_save":
        part = _ref_part(op)
        if part is None and parallel_id > 0:  # a broadcast variable: every device holds it; the first saves it
            return None
        return _model_save_kernel(op.attrs["variable_name"], part)
    raise KeyError(f"system op type {kind!r} has no runtime kernel")


def _ref_part(op: OpConf) -> tuple[tuple[int, ...], tuple[slice, ...]] | None:
    """(logical shape, this device's slices) of the variable a model-io op writes, when it is split."""
    if "ref_slice" not in op.attrs:
        return None
    return tuple(op.attrs["logical_shape"]), tuple(slice(lo, hi) for lo, hi in op.attrs["ref_slice"])


def mirrored_list(array: np.ndarray, parts: int, axis: int | None) -> MirroredList:
    """A mirrored return's blob per device: the pulled logical blob cut on ``axis`` (np.array_split cuts as
    OneFlow's balanced splitter: the first pieces one row longer), or the whole blob for each device where it lies
    B (a copy each, so that writing one leaves the others as the devices held them)."""
    if axis is None:
        return MirroredList([array.copy() for _ in range(parts)], array)
    return MirroredList(np.array_split(array, parts, axis), array)


def _pushed(value: Any) -> np.ndarray:
    """A pushed value: an array, or a mirrored placeholder's pieces (one per device), which lie concatenated."""
    return np.concatenate(value) if isinstance(value, (list, tuple)) else value


def _copy(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
    src, out = ins[0], outs[0]
    if src.dtype is out.dtype:  # assignment broadcasts as copyto does, in about a third of its time on small blobs
        out[...] = src
    else:  # copyto's casting rule ("same_kind") decides
        np.copyto(out, src)


def _fused_copy(ins: list[np.ndarray], outs: list[np.ndarray]) -> FusedCall | None:
    if ins[0].dtype != outs[0].dtype or ins[0].shape != outs[0].shape:
        return None
    from ..kernels.numba_cpu.array import copy_flat  # Numba only once a schedule is fused

    return FusedCall(copy_flat, (ins[0], outs[0]))


_COPY = fusable(_copy, _fused_copy)


def _fused_push(buffer: deque[Any], out: np.ndarray) -> FusedCall:
    """The push copy inside a fused segment: the launched instance's array is the segment's argument."""
    from ..kernels.numba_cpu.array import copy_flat

    def fetch() -> np.ndarray:  # _pushed, inlined: one Python call less per pushed array and call
        value = buffer.popleft().push_array
        return np.concatenate(value) if isinstance(value, (list, tuple)) else value

    pushed = External(fetch, np.empty(out.shape, out.dtype), launch=buffer)
    return FusedCall(copy_flat, (pushed, out))


def _fused_copy_out(blob: np.ndarray, deliver: Callable[[np.ndarray], None], launch: Any = None) -> FusedCall:
    """A copy out of the runtime (a pull, a watch) inside a fused segment: the segment fills a fresh array, and
    ``deliver`` gets it once the segment's kernels all ran. ``launch``: a pull's ForeignOutput buffer."""
    from ..kernels.numba_cpu.array import copy_flat

    shape, dtype = blob.shape, blob.dtype
    return FusedCall(copy_flat, (blob, External(lambda: np.empty(shape, dtype), np.empty(shape, dtype), deliver,
                                                 launch)))


def _dtype_of(array: np.ndarray) -> Any:
    from ..ir.dtype import from_numpy

    return from_numpy(array.dtype)


def decode_path(blob: np.ndarray) -> Path:
    return Path(bytes(blob).rstrip(b"\0").decode("utf-8"))


def _model_load_kernel(variable_name: str, initializer: dict[str, Any], seed: int,
                       part: tuple[tuple[int, ...], tuple[slice, ...]] | None = None) -> KernelFn:
    """OneFlow's ModelLoad kernel: read the variable, or initialize it when the checkpoint has no ``out`` for it
    (the session has checked every file and warned before launching the job). ``part``: a variable split over
    devices reads (or draws) its logical value and keeps this device's slice."""
    from ..kernels.initializers import initialize
    from .checkpoint_io import check_variable, read_data

    def model_load(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
        path, ref = decode_path(ins[0]), ins[1]
        dtype = _dtype_of(ref)
        shape = ref.shape if part is None else part[0]
        out = check_variable(path, variable_name, shape, dtype)
        value = initialize(initializer, shape, dtype, seed) if out is None else read_data(out, shape, dtype)
        ref[...] = value if part is None else value[part[1]]

    return model_load


def _model_save_kernel(variable_name: str, part: tuple[tuple[int, ...], tuple[slice, ...]] | None = None) -> KernelFn:
    """``part``: a variable split over devices; each device writes its slice into the variable's ``out``."""
    from .checkpoint_io import save_variable, save_variable_slice

    def model_save(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
        if part is None:
            save_variable(decode_path(ins[0]), variable_name, ins[1])
        else:
            save_variable_slice(decode_path(ins[0]), variable_name, ins[1], part[0], part[1])

    return model_save
