"""Placement and name scopes (``flow.scope.placement``, ``flow.scope.namespace``) as explicit stacks."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..errors import OpInferError, PlacementError
from ..ir import ParallelConf
from .location import user_location

DEVICE_TAGS = ("cpu", "gpu")
_DEVICE_NAME = re.compile(r"^(\d+):(\d+)(?:-(\d+))?$")


SESSION_CONFIG_FIELDS = ("cpu_device_num", "gpu_device_num", "debug_mode")


@dataclass
class EnvConfig:
    """``flow.config`` and ``flow.env``: resource settings, read when a session starts. The ``flow.config`` fields
    (``SESSION_CONFIG_FIELDS``) belong to the session, as in OneFlow's per-session ConfigProto: a cleared session
    starts from their defaults. The ``flow.env`` fields belong to the process (OneFlow's env_proto)."""

    cpu_device_num: int = 1
    gpu_device_num: int = 0
    debug_mode: bool = False
    machines: tuple[str, ...] = ()  # flow.env.machine: one address per machine; machine id = index, 0 the master
    ctrl_port: int | None = None
    data_port: int | None = None
    ray: bool = False  # flow.env.ray: run the machines on a Ray cluster (flowlab.distributed)
    ray_address: str | None = None  # that cluster's address; None: start a local one
    log_dir: str = "./log"  # flow.env.log_dir: debug mode writes under <log_dir>/<hostname>/ (OneFlow's LogDir())
    # flow.config settings flowlab accepts and does not act on (flowlab/config.py SETTINGS), as set: (name, value)
    options: tuple[tuple[str, object], ...] = ()

    @property
    def machine_num(self) -> int:
        """OneFlow's ``resource.machine_num``: the number of machines ``flow.env.machine`` names, else one."""
        return max(1, len(self.machines))

    def reset(self) -> None:
        """Back to the defaults of a fresh process (tests start each case here)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, f.default)

    def reset_session_config(self) -> None:
        """Back to the ``flow.config`` defaults a new session starts from; ``flow.env`` settings stay."""
        for f in dataclasses.fields(self):
            if f.name in SESSION_CONFIG_FIELDS:
                setattr(self, f.name, f.default)


ENV = EnvConfig()
_placements: list[ParallelConf] = []
name_scope_stack: list[str] = []
_gpu_warned = False


def parse_parallel_conf(device_tag: str, machine_device_ids: str | Sequence[str]) -> ParallelConf:
    """Check ``("cpu", "0:0-1")``-style placements against ``flow.config`` and ``flow.env`` and return the
    ParallelConf they name. Errors name the user's line (the ``with flow.scope.placement`` line)."""
    where = user_location()
    at = f"{where}: " if where else ""
    if device_tag not in DEVICE_TAGS:
        raise PlacementError(f"{at}device_tag must be one of {DEVICE_TAGS}; got {device_tag!r}")
    names = [machine_device_ids] if isinstance(machine_device_ids, str) else list(machine_device_ids)
    if not names:
        raise PlacementError(f"{at}machine_device_ids is empty; expected e.g. '0:0' or ['0:0-1']")
    # With CUDA (or its simulator) 'gpu' devices are counted by gpu_device_num (1 unless set, OneFlow's CUDA
    # build default); a CPU-only build counts them with gpu_device_num when set, else as CPU devices.
    if device_tag == "gpu" and gpu_available():
        device_num, setting = gpu_device_num_in_use(), "gpu_device_num"
    elif device_tag == "gpu" and ENV.gpu_device_num > 0:
        device_num, setting = ENV.gpu_device_num, "gpu_device_num"
    else:
        device_num, setting = ENV.cpu_device_num, "cpu_device_num"
    seen: set[tuple[int, int]] = set()
    for name in names:
        match = _DEVICE_NAME.match(name) if isinstance(name, str) else None
        if match is None:
            raise PlacementError(
                f"{at}malformed machine_device_ids entry {name!r}; expected '<machine>:<device>' or "
                "'<machine>:<first>-<last>', e.g. '0:0' or '0:0-3'"
            )
        machine, lo, hi = int(match[1]), int(match[2]), int(match[3] if match[3] is not None else match[2])
        if hi < lo:
            raise PlacementError(f"{at}device range {name!r} ends before it starts")
        if machine >= ENV.machine_num:
            named = (f"flow.env.machine names {ENV.machine_num} machine(s) (ids 0-{ENV.machine_num - 1})"
                     if ENV.machines else "no flow.env.machine(...) was given, so there is one machine (id 0)")
            raise PlacementError(f"{at}placement {device_tag}:{name} names machine {machine}, but {named}")
        if device_tag == "gpu" and gpu_available() and hi >= cuda_device_count() and hi < device_num:
            raise PlacementError(
                f"{at}placement {device_tag}:{name} names gpu device {hi}, but this machine has "
                f"{cuda_device_count()} CUDA device(s) (ids 0-{cuda_device_count() - 1})")
        if hi >= device_num:
            raise PlacementError(
                f"{at}placement {device_tag}:{name} names {device_tag} device {hi}, but flow.config.{setting} is "
                f"{device_num} (device ids 0-{device_num - 1}); call flow.config.{setting}({hi + 1}) first"
            )
        for dev in range(lo, hi + 1):
            if (machine, dev) in seen:
                raise PlacementError(f"{at}placement {names} names device {machine}:{dev} twice")
            seen.add((machine, dev))
    return ParallelConf(device_tag, tuple(names))


def default_parallel_conf() -> ParallelConf:
    """OneFlow's default placement (``placement_context.GetDefaultMachineDeviceIds``): every device of every
    machine, ``["0:0-(n-1)", "1:0-(n-1)", ...]`` with n = cpu_device_num (one device: ``"0:0"``)."""
    n = ENV.cpu_device_num
    names = tuple(f"{m}:0" if n == 1 else f"{m}:0-{n - 1}" for m in range(ENV.machine_num))
    return ParallelConf("cpu", names)


@dataclass
class CudaCapability:
    """What the front end asks about CUDA once a 'gpu' placement is named. The kernels answer (they import
    ``numba.cuda``); ``import flowlab`` plugs their answers in (flowlab/__init__.py), so the front end imports no
    kernels. Until then: no CUDA, 'gpu' placements run on the CPU."""

    available: Callable[[], bool] = lambda: False
    device_count: Callable[[], int] = lambda: 0


CUDA = CudaCapability()
_cuda_probe: list[bool] = []  # whether CUDA (a GPU or the simulator) is here, asked once per process


def gpu_available() -> bool:
    """Whether 'gpu' placements run on a GPU: a CUDA device or Numba's simulator (``CUDA.available``, which
    imports ``numba.cuda``: asked only once a 'gpu' placement is named)."""
    if not _cuda_probe:
        _cuda_probe.append(CUDA.available())
    return _cuda_probe[0]


def cuda_device_count() -> int:
    """CUDA devices visible here (the simulator has one)."""
    return CUDA.device_count()


def gpu_device_num_in_use(gpu_placed: bool = True) -> int:
    """GPUs per machine that the Plan lays threads out for: flow.config.gpu_device_num (1 unless set) where CUDA
    runs 'gpu' placements, else 0. ``gpu_placed``: whether the jobs place anything on a GPU; a CPU-only session
    keeps the CPU-only thread layout (CPU threads from 0), so its Plan does not depend on what ran before."""
    if not (gpu_placed and _cuda_probe and _cuda_probe[0]):
        return 0
    return ENV.gpu_device_num or 1


def _effective(conf: ParallelConf) -> ParallelConf:
    """A 'gpu' placement runs on a GPU where CUDA is (``gpu_available``); elsewhere on the CPU, as on a CPU-only
    OneFlow build, with one warning per process."""
    global _gpu_warned
    if conf.device_tag != "gpu" or gpu_available():
        return conf
    if not _gpu_warned:
        warnings.warn(
            "flowlab has no CUDA device here: 'gpu' placements run on the CPU (like a CPU-only OneFlow build)",
            stacklevel=4,
        )
        _gpu_warned = True
    return ParallelConf("cpu", conf.device_names)


class PlacementScope:
    """``with flow.scope.placement("cpu", "0:0"):`` — also a value for ``default_placement_scope``."""

    def __init__(self, device_tag: str, machine_device_ids: str | Sequence[str] = "0:0") -> None:
        self.parallel_conf = _effective(parse_parallel_conf(device_tag, machine_device_ids))

    def __enter__(self) -> ParallelConf:
        _placements.append(self.parallel_conf)
        return self.parallel_conf

    def __exit__(self, *exc: object) -> None:
        _placements.pop()

    def __repr__(self) -> str:
        return f"flow.scope.placement({self.parallel_conf})"


placement = PlacementScope


@contextlib.contextmanager
def placed_on(conf: ParallelConf) -> Iterator[ParallelConf]:
    """Ops added in the block go to ``conf``: passes place an op's gradient ops beside it (OneFlow builds them
    under the forward op's scope) and a variable's update ops beside the variable."""
    _placements.append(conf)
    try:
        yield conf
    finally:
        _placements.pop()


class LogicalView:
    """``flow.scope.consistent_view()`` / ``mirrored_view()``: a scope (``with``) and a value for
    ``FunctionConfig.default_logical_view``. Consistent ops see logical blobs whose SBP inference decides;
    mirrored ops run on each device's own piece (OneFlow's AddAndInferMirroredOp)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> LogicalView:
        _views.append(self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        _views.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogicalView) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"flow.scope.{self.name}_view()"


_views: list[str] = []


def consistent_view() -> LogicalView:
    return LogicalView("consistent")


def mirrored_view() -> LogicalView:
    return LogicalView("mirrored")


def current_view(default: str = "consistent") -> str:
    return _views[-1] if _views else default


def current_placement(default: ParallelConf | None = None) -> ParallelConf:
    if _placements:
        return _placements[-1]
    return default or default_parallel_conf()


@contextlib.contextmanager
def namespace(name: str) -> Iterator[str]:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a name scope needs a non-empty string; got {name!r}")
    name_scope_stack.append(name)
    try:
        yield name
    finally:
        name_scope_stack.pop()


def scoped_name(name: str) -> str:
    """OneFlow joins name scopes with '-': ``hidden-weight``. An empty name would silently become the scope's
    prefix (``block-``), so every named op and variable is refused here."""
    if not name:
        where = user_location()
        raise OpInferError(f"{where + ': ' if where else ''}op name is empty (got {name!r}); give a non-empty name, "
                           "or name=None where the op generates one")
    return "-".join([*name_scope_stack, name])
