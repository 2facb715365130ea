"""A job function's signature: its input placeholders and its return annotation, checked as OneFlow does."""

from __future__ import annotations

import functools
import inspect
import typing
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import typing as tp
from ..errors import JobAnnotationError, JobArgumentError
from ..local_blob import local_blob
from .blob import LazyBlob

_SUPPORTED_RETURNS = (
    "tp.Numpy, tp.ListNumpy, tp.ListListNumpy, Tuple/List/Dict of those, None, tp.Callback[...] or "
    "tp.Bundle[...] of those"
)
_LEAVES = ("numpy", "list_numpy", "list_list_numpy", "future")  # return kinds that take one blob


@dataclass(frozen=True)
class ReturnSpec:
    kind: str  # numpy | list_numpy | list_list_numpy | tuple | list | dict | none | bundle | future (unannotated)
    children: tuple[ReturnSpec, ...] = ()


@dataclass(frozen=True)
class JobSignature:
    job_name: str
    params: tuple[tuple[str, tp.FixedTensorDef], ...]  # one per placeholder: a Tuple parameter's are "x[0]", ...
    returns: ReturnSpec
    is_callback: bool
    # Where a parameter is annotated Tuple[...] of placeholders (OneFlow's _RecusiveMakeInputBlobDef): per
    # parameter, its placeholder's index in ``params`` or a tuple nesting of them; None when every one is plain.
    arg_structure: tuple[Any, ...] | None = None
    param_names: tuple[str, ...] = ()  # the function's own parameter names, where arg_structure is set

    @functools.cached_property
    def array_specs(self) -> tuple[tuple[tuple[int, ...], np.dtype, tuple[int, ...]], ...] | None:
        """(shape, dtype, C strides) per parameter, when every one is a plain Numpy placeholder (else None: the
        slow path)."""
        if self.arg_structure is not None or any(isinstance(t, tp.MirroredTensorDef) for _, t in self.params):
            return None
        return self.placeholder_specs

    @functools.cached_property
    def placeholder_specs(self) -> tuple[tuple[tuple[int, ...], np.dtype, tuple[int, ...]], ...]:
        """(shape, dtype, C strides) per parameter; a ListNumpy placeholder's are those of each device's array."""
        return tuple((tuple(t.shape), t.dtype.np, np.empty(t.shape, t.dtype.np).strides) for _, t in self.params)

    def pieces(self, devices: int) -> tuple[int, ...]:
        """Per parameter: 0, or for a ListNumpy placeholder the arrays it takes, one per device (``check_inputs``)."""
        return tuple(devices if isinstance(t, tp.MirroredTensorDef) else 0 for _, t in self.params)

    def group_args(self, leaves: list[Any]) -> list[Any]:
        """The job function's arguments from one value per placeholder: a Tuple parameter's as a tuple."""
        if self.arg_structure is None:
            return leaves

        def build(node: Any) -> Any:
            return leaves[node] if isinstance(node, int) else tuple(build(n) for n in node)

        return [build(node) for node in self.arg_structure]


def parse_signature(fn: Any, localns: dict[str, Any] | None = None) -> JobSignature:
    """``localns``: the namespace the function was defined in, for string annotations that name locals."""
    name = fn.__name__
    try:  # annotations may be strings (``from __future__ import annotations``)
        sig = inspect.signature(fn, eval_str=True, locals=localns)
    except Exception as err:  # any failure to evaluate is the user's annotation
        raise JobAnnotationError(f"job function {name}: cannot evaluate its annotations: {err}") from err
    params = list(sig.parameters.values())
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
            raise JobAnnotationError(f"job function {name}: parameter {p.name!r} must be a plain positional parameter")
    annotated = [p.annotation is not p.empty for p in params]
    has_return = sig.return_annotation is not sig.empty
    if any(annotated) or has_return:
        if not all(annotated):
            missing = [p.name for p, a in zip(params, annotated) if not a]
            raise JobAnnotationError(
                f"job function {name}: annotate every parameter or none (OneFlow's rule); "
                f"{missing} have no annotation; use e.g. tp.Numpy.Placeholder((2, 3))"
            )
        defs: list[tuple[str, tp.FixedTensorDef]] = []
        structure = tuple(_param_leaves(name, p.name, p.annotation, defs) for p in params)
        # no return annotation: OneFlow returns the future (LazyFutureRemoteBlobs), as for the legacy style
        returns, is_callback = _return_spec(name, sig.return_annotation) if has_return else (ReturnSpec("future"),
                                                                                            False)
        if any(not isinstance(node, int) for node in structure):
            return JobSignature(name, tuple(defs), returns, is_callback, structure, tuple(p.name for p in params))
    else:  # legacy style: def f(x=flow.FixedTensorDef(...)), result as a future with .get()
        defs = [(p.name, _input_def(name, p.name, p.default)) for p in params]
        returns, is_callback = ReturnSpec("future"), False
    return JobSignature(name, tuple(defs), returns, is_callback)


def _param_leaves(job: str, param: str, ann: Any, leaves: list[tuple[str, tp.FixedTensorDef]]) -> Any:
    """A parameter's placeholders, appended to ``leaves``: its index there, or for ``Tuple[...]`` of
    placeholders (nested as deep as the user likes) a tuple of such."""
    if typing.get_origin(ann) is tuple:
        args = typing.get_args(ann)
        if not args or Ellipsis in args:
            raise JobAnnotationError(f"job function {job}: parameter {param!r} is annotated {ann!r}; a Tuple "
                                     "parameter names each placeholder, e.g. Tuple[tp.Numpy.Placeholder((2,)), "
                                     "tp.Numpy.Placeholder((3,))]")
        return tuple(_param_leaves(job, f"{param}[{i}]", a, leaves) for i, a in enumerate(args))
    leaves.append((param, _input_def(job, param, ann)))
    return len(leaves) - 1


def _input_def(job: str, param: str, value: Any) -> tp.FixedTensorDef:
    if isinstance(value, tp.FixedTensorDef):
        return value
    if value is inspect.Parameter.empty:
        raise JobAnnotationError(f"job function {job}: parameter {param!r} has no placeholder")
    raise JobAnnotationError(
        f"job function {job}: parameter {param!r} is annotated with {value!r}; expected "
        "tp.Numpy.Placeholder(shape, dtype), tp.ListNumpy.Placeholder(shape, dtype), "
        "tp.ListListNumpy.Placeholder(shape, dtype) or a Tuple[...] of those"
    )


def _return_spec(job: str, ann: Any) -> tuple[ReturnSpec, bool]:
    origin = typing.get_origin(ann)
    if origin is tp.Callback:
        (inner,) = typing.get_args(ann)
        return _spec(job, inner), True
    return _spec(job, ann), False


def _spec(job: str, ann: Any) -> ReturnSpec:
    if ann is None or ann is type(None):
        return ReturnSpec("none")
    if ann is tp.Numpy:
        return ReturnSpec("numpy")
    if ann is tp.ListNumpy:
        return ReturnSpec("list_numpy")
    if ann is tp.ListListNumpy:
        return ReturnSpec("list_list_numpy")
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is tuple and args and Ellipsis not in args:
        return ReturnSpec("tuple", tuple(_spec(job, a) for a in args))
    if origin is list and len(args) == 1:
        return ReturnSpec("list", (_spec(job, args[0]),))
    if origin is dict and len(args) == 2 and args[0] is str:
        return ReturnSpec("dict", (_spec(job, args[1]),))
    if origin is tp.Bundle:
        return ReturnSpec("bundle", (_spec(job, args[0]),))
    raise JobAnnotationError(
        f"job function {job}: unsupported return annotation {ann!r}; expected {_SUPPORTED_RETURNS}"
    )


def flatten_returned(job: str, spec: ReturnSpec, value: Any) -> tuple[list[LazyBlob], Any]:
    """Check a traced function's return value against its annotation; return (blobs, structure)."""
    blobs: list[LazyBlob] = []

    def walk(spec: ReturnSpec, value: Any, path: str) -> Any:
        if spec.kind in _LEAVES and isinstance(value, LazyBlob):
            blobs.append(value)
            return len(blobs) - 1
        if spec.kind == "none":
            if value is not None:
                raise JobAnnotationError(f"job function {job} is annotated to return None but returned {value!r}")
            return None
        if spec.kind == "bundle":
            return walk_bundle(spec.children[0], value, path)
        if spec.kind == "tuple" and isinstance(value, tuple) and len(value) == len(spec.children):
            return tuple(walk(s, v, f"{path}[{i}]") for i, (s, v) in enumerate(zip(spec.children, value)))
        if spec.kind == "list" and isinstance(value, (list, tuple)):
            return [walk(spec.children[0], v, f"{path}[{i}]") for i, v in enumerate(value)]
        if spec.kind == "dict" and isinstance(value, dict):
            return {k: walk(spec.children[0], v, f"{path}[{k!r}]") for k, v in value.items()}
        if spec.kind == "future" and isinstance(value, (tuple, list)):
            return type(value)(walk(spec, v, f"{path}[{i}]") for i, v in enumerate(value))
        if spec.kind == "future" and isinstance(value, dict):
            return {k: walk(spec, v, f"{path}[{k!r}]") for k, v in value.items()}
        if spec.kind == "future" and value is None:
            return None
        expected = {"numpy": "a blob", "list_numpy": "a blob", "list_list_numpy": "a blob",
                    "future": "a blob, or a tuple, list or dict of blobs",
                    "tuple": f"a tuple of {len(spec.children)}", "list": "a list", "dict": "a dict"}[spec.kind]
        raise JobAnnotationError(
            f"job function {job} returned {type(value).__name__} at {path or 'top level'}; its annotation expects "
            f"{expected} (a blob is what a flowlab op returns inside the job function)"
        )

    def walk_bundle(leaf: ReturnSpec, value: Any, path: str) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(walk_bundle(leaf, v, f"{path}[{i}]") for i, v in enumerate(value))
        if isinstance(value, dict):
            return {k: walk_bundle(leaf, v, f"{path}[{k!r}]") for k, v in value.items()}
        return walk(leaf, value, path)

    structure = walk(spec, value, "")
    return blobs, structure


def unflatten(spec: ReturnSpec, structure: Any, arrays: list[np.ndarray]) -> Any:
    """Put pulled arrays back into the returned structure, as the annotation asks."""
    if spec.kind == "numpy" and type(structure) is int:  # one returned blob: the common call
        value = arrays[structure]
        return numpy_return(value) if type(value) is tp.MirroredList else value  # a mirrored return seen consistently

    def leaf(spec: ReturnSpec, index: int) -> Any:
        value = arrays[index]
        if spec.kind == "list_numpy":  # a mirrored return was pulled as its devices' blobs already
            return list(value) if isinstance(value, tp.MirroredList) else [value]
        if spec.kind == "list_list_numpy":  # per device its tensor list: flowlab's are lists of one tensor
            return [[piece] for piece in value] if isinstance(value, tp.MirroredList) else [[value]]
        if spec.kind == "future":  # OneFlow's LocalMirroredTensor: .numpy(), .numpy_list()
            return local_blob(value)
        return numpy_return(value) if isinstance(value, tp.MirroredList) else value  # tp.Numpy: seen consistently

    def build(spec: ReturnSpec, node: Any) -> Any:
        # each leaf as its own annotation asks (a tp.Numpy beside a tp.ListNumpy in a Tuple stays one array)
        if node is None:
            return None
        if spec.kind == "bundle":
            return bundle(spec.children[0], node)
        if isinstance(node, int):
            return leaf(spec, node)
        if spec.kind == "tuple":
            return tuple(build(s, n) for s, n in zip(spec.children, node))
        if isinstance(node, dict):  # a Dict annotation's values, or an unannotated (future) dict
            return {k: build(spec.children[0] if spec.children else spec, v) for k, v in node.items()}
        if spec.kind == "list":
            return [build(spec.children[0], n) for n in node]
        return type(node)(build(spec, n) for n in node)  # an unannotated (future) tuple or list

    def bundle(spec: ReturnSpec, node: Any) -> Any:
        if isinstance(node, (tuple, list)):
            return type(node)(bundle(spec, n) for n in node)
        if isinstance(node, dict):
            return {k: bundle(spec, v) for k, v in node.items()}
        return build(spec, node)

    return build(spec, structure)


def numpy_return(value: tp.MirroredList) -> Any:
    """A mirrored return as tp.Numpy: its pieces joined. OneFlow refuses tp.Numpy for any dynamic blob when the job
    is traced; flowlab only when this call's pieces cannot be joined (docs/deviations.md)."""
    if value.logical is None:
        raise JobAnnotationError(
            f"a returned blob's pieces have shapes {[p.shape for p in value]} this call, which no one array holds: "
            "only fixed shaped blob compatible to oneflow.typing.Numpy. you can change annotation to "
            "oneflow.typing.ListNumpy or oneflow.typing.ListListNumpy")
    return value.logical


def exact_inputs(sig: JobSignature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any] | None:
    """The common call's check, a few attribute compares per argument: every argument positional, an ndarray of
    exactly its placeholder's shape and dtype, laid out C-contiguous (its strides are the C strides). None when
    anything differs; ``check_inputs`` then checks (and explains) everything."""
    specs = sig.array_specs
    if specs is None or kwargs or len(args) != len(specs):
        return None
    for value, (shape, dtype, strides) in zip(args, specs):
        # dtype by identity first: NumPy's built-in dtypes are singletons, and == costs ~0.3 us
        if type(value) is not np.ndarray or value.shape != shape or value.strides != strides \
                or (value.dtype is not dtype and value.dtype != dtype):
            return None
    return list(args)


def check_inputs(sig: JobSignature, args: tuple[Any, ...], kwargs: dict[str, Any], devices: int = 1) -> list[Any]:
    """Validate call arguments against the placeholders; return C-contiguous arrays to push. A ListNumpy
    placeholder takes one array per device of the job's default placement (``devices``): its single array on
    one device, the list of pieces (device order) on several."""
    arrays = exact_inputs(sig, args, kwargs)
    if arrays is not None:
        return arrays
    names = list(sig.param_names) if sig.arg_structure is not None else [n for n, _ in sig.params]
    if len(args) > len(names) or set(kwargs) - set(names):
        extra = sorted(set(kwargs) - set(names))
        raise JobArgumentError(
            f"{sig.job_name}() takes {len(names)} argument(s) ({', '.join(names) or 'none'}); "
            f"got {len(args)} positional" + (f" and unknown keyword(s) {extra}" if extra else "")
        )
    values = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in values:
            raise JobArgumentError(f"{sig.job_name}() got argument {key!r} twice")
        values[key] = value
    missing = [n for n in names if n not in values]
    if missing:
        raise JobArgumentError(f"{sig.job_name}() is missing argument(s) {missing}")
    leaf_values = _leaf_values(sig, values) if sig.arg_structure is not None else values
    arrays = []
    for name, tdef in sig.params:
        value = leaf_values[name]
        if isinstance(tdef, tp.MirroredTensorListDef):
            value = _tensor_lists(sig.job_name, name, tdef, value)
        if isinstance(tdef, tp.MirroredTensorDef):
            if not isinstance(value, (list, tuple)) or len(value) != devices:
                got = f"a list of {len(value)}" if isinstance(value, (list, tuple)) else type(value).__name__
                raise JobArgumentError(
                    f"{sig.job_name}(): argument {name!r} is a ListNumpy placeholder: expected a list with one "
                    f"ndarray per device ({devices} device(s)); got {got}"
                )
            pieces = [_check_array(sig.job_name, f"{name}[{i}]", tdef, v) for i, v in enumerate(value)]
            arrays.append(pieces[0] if devices == 1 else pieces)
            continue
        arrays.append(_check_array(sig.job_name, name, tdef, value))
    return arrays


def _leaf_values(sig: JobSignature, values: dict[str, Any]) -> dict[str, Any]:
    """Each placeholder's value, by its name in ``sig.params``: a Tuple parameter's value is a tuple (or list)
    with one value per element of its annotation."""
    out: dict[str, Any] = {}

    def walk(node: Any, value: Any, name: str) -> None:
        if isinstance(node, int):
            out[sig.params[node][0]] = value
            return
        if not isinstance(value, (tuple, list)) or len(value) != len(node):
            got = f"a {type(value).__name__} of {len(value)}" if isinstance(value, (tuple, list)) else \
                type(value).__name__
            raise JobArgumentError(f"{sig.job_name}(): argument {name!r} is annotated Tuple[...] of {len(node)} "
                                   f"placeholder(s): expected a tuple of {len(node)}; got {got}")
        for i, (n, v) in enumerate(zip(node, value)):
            walk(n, v, f"{name}[{i}]")

    for node, name in zip(sig.arg_structure or (), sig.param_names):
        walk(node, values[name], name)
    return out


def _tensor_lists(job: str, name: str, tdef: tp.FixedTensorDef, value: Any) -> Any:
    """A tp.ListListNumpy argument, per device a list of tensors, as a ListNumpy one: flowlab takes one tensor per
    device (a dynamic blob, up to the placeholder's size; a tensor list of several is not built)."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (list, tuple)) for v in value):
        raise JobArgumentError(f"{job}(): argument {name!r} is a ListListNumpy placeholder: expected a list with "
                               f"one list of ndarrays per device, e.g. [[x]]; got {type(value).__name__}")
    longer = [i for i, v in enumerate(value) if len(v) != 1]
    if longer:
        raise JobArgumentError(
            f"{job}(): argument {name!r} is a ListListNumpy placeholder: flowlab takes one ndarray of at most shape "
            f"{tdef.shape} per device ([[x]]); device {longer[0]} has {len(value[longer[0]])} (a tensor list of "
            "several tensors, a dynamic blob in OneFlow, is not built: docs/oneflow-api.md)")
    return [v[0] for v in value]


def _check_array(job: str, name: str, tdef: tp.FixedTensorDef, value: Any) -> np.ndarray:
    wanted = f"a numpy.ndarray of shape {tdef.shape} and dtype {tdef.dtype.np_name}"
    if not isinstance(value, np.ndarray):
        raise JobArgumentError(f"{job}(): argument {name!r} must be {wanted}; got {type(value).__name__}")
    if value.dtype != tdef.dtype.np:
        raise JobArgumentError(
            f"{job}(): argument {name!r} must be {wanted}; got dtype {value.dtype} "
            f"(convert with .astype(np.{tdef.dtype.np_name}))"
        )
    if value.shape != tdef.shape:
        what = "rank" if value.ndim != len(tdef.shape) else "shape"
        if isinstance(tdef, tp.MirroredTensorDef):
            # a dynamic blob (OneFlow's MirroredTensorDef._CheckNdarray): the same rank, at most as many elements
            if what == "shape" and value.size <= int(np.prod(tdef.shape)):
                return np.ascontiguousarray(value)
            raise JobArgumentError(
                f"{job}(): argument {name!r} is a ListNumpy placeholder of shape {tdef.shape}: each piece is a "
                f"numpy.ndarray of rank {len(tdef.shape)} with at most {int(np.prod(tdef.shape))} elements (a dynamic "
                f"blob); got {what} mismatch: shape {value.shape}")
        raise JobArgumentError(f"{job}(): argument {name!r} must be {wanted}; got {what} mismatch: shape "
                               f"{value.shape}")
    return np.ascontiguousarray(value)
