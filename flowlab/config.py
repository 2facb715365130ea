"""``flow.config``: process-wide settings (device counts, debug mode), read when a session starts.

``cpu_device_num``, ``gpu_device_num`` and ``enable_debug_mode`` act. The rest of OneFlow v0.3.4's
``flow.config`` (``framework/config_util.py``) is declared in ``SETTINGS``: each setting's type, default and why
flowlab does not act on it. Their setters check the value as OneFlow does (``type(val) is bool``/``int``/``str``),
keep it (``flow.config.legacy_model_io_enabled()`` reads one back) and warn once that it changes nothing.
``flow.config.collective_boxing.<name>`` reaches the settings under ``collective_boxing.``.
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass
from typing import Any

from .frontend.scope import ENV, gpu_available

_warned: set[str] = set()


def cpu_device_num(n: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"cpu_device_num takes a positive int; got {n!r}")
    ENV.cpu_device_num = n


def gpu_device_num(n: int) -> None:
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"gpu_device_num takes a non-negative int; got {n!r}")
    ENV.gpu_device_num = n
    if "gpu_device_num" not in _warned and not gpu_available():  # 'gpu' placements run on the CPU here
        _warned.add("gpu_device_num")
        warnings.warn("flowlab accepts flow.config.gpu_device_num but does not act on it: there is no CUDA device "
                      "(nor the simulator) here, so 'gpu' placements run on the CPU", stacklevel=2)


def enable_debug_mode(flag: bool = True) -> None:
    """Write the job set, each optimized job, the merged plan and its DOT under <log_dir>/<hostname>/ at start
    (``flow.env.log_dir``, ./log by default)."""
    ENV.debug_mode = bool(flag)


@dataclass(frozen=True)
class Setting:
    """One of OneFlow's ``flow.config`` settings that flowlab accepts without acting on it."""

    name: str  # dotted under flow.config: "collective_boxing.nccl_enable_all_to_all"
    type: type  # OneFlow asserts ``type(val) is <type>``
    default: Any  # OneFlow's default (resource.proto, job_set.proto), or None where its proto has none
    why: str  # why setting it changes nothing in flowlab
    arg_default: Any = None  # the setter's own default argument (OneFlow's ``val=True``), None: required


_NCCL = "flowlab has no NCCL: devices exchange blobs through boxing tasks that copy in host or device memory"
_GPU = "flowlab's Numba kernels compute float32 in float32 (no TF32 tensor-core path)"
_IO = ("flowlab has one model I/O: System-ModelInit/Load/Save jobs and flow.checkpoint, which read and write "
       "OneFlow's directory layout")
_HOST = "flowlab allocates its registers as NumPy arrays (or Numba device arrays) itself"
_NET = "flowlab's machines exchange registers through Ray (flow.env.ray), not OneFlow's comm net"
_THREADS = "flowlab runs one OS thread per Plan thread, as its execution policy picks"
SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("machine_num", int, 0, "flowlab takes the machines from flow.env.machine (their count is "
                "flow.env.machine_num())"),
        Setting("enable_tensor_float_32_compute", bool, True, _GPU, True),
        Setting("enable_legacy_model_io", bool, False, _IO, True),
        Setting("enable_model_io_v2", bool, False, _IO),
        Setting("load_library", str, None, "flowlab's ops are Python (flowlab.ops); it loads no OneFlow op library"),
        Setting("load_library_now", str, None, "flowlab's ops are Python (flowlab.ops); it loads no OneFlow op "
                "library"),
        Setting("comm_net_worker_num", int, None, _NET),
        Setting("max_mdsave_worker_num", int, None, "flowlab saves a model in the calling thread"),
        Setting("enable_numa_aware_cuda_malloc_host", bool, None, _HOST, True),
        Setting("compute_thread_pool_size", int, None, _THREADS),
        Setting("rdma_mem_block_mbyte", int, None, _NET),
        Setting("rdma_recv_msg_buf_mbyte", int, None, _NET),
        Setting("reserved_host_mem_mbyte", int, None, _HOST),
        Setting("reserved_device_mem_mbyte", int, None, _HOST),
        Setting("use_rdma", bool, None, _NET, True),
        Setting("thread_enable_local_message_queue", bool, None, _THREADS),
        Setting("save_downloaded_file_to_local_fs", bool, None, "flowlab reads local files only", True),
        Setting("persistence_buf_byte", int, None, "flowlab reads and writes whole files"),
        Setting("collect_act_event", bool, None, "flowlab's runtime emits act events to its hooks whenever someone "
                "subscribes (flowlab.debug)", True),
        Setting("collective_boxing.enable_fusion", bool, True, _NCCL, True),
        Setting("collective_boxing.num_callback_threads", int, 4, _NCCL),
        Setting("collective_boxing.nccl_num_streams", int, 1, _NCCL),
        Setting("collective_boxing.nccl_fusion_threshold_mb", int, 16, _NCCL),
        Setting("collective_boxing.nccl_fusion_all_reduce", bool, True, _NCCL),
        Setting("collective_boxing.nccl_fusion_reduce_scatter", bool, False, _NCCL),
        Setting("collective_boxing.nccl_fusion_all_gather", bool, False, _NCCL),
        Setting("collective_boxing.nccl_fusion_reduce", bool, True, _NCCL),
        Setting("collective_boxing.nccl_fusion_broadcast", bool, True, _NCCL),
        Setting("collective_boxing.nccl_fusion_all_reduce_use_buffer", bool, False, _NCCL),
        Setting("collective_boxing.nccl_fusion_max_ops", int, 64, _NCCL),
        Setting("collective_boxing.nccl_enable_all_to_all", bool, False, _NCCL),
        Setting("collective_boxing.nccl_enable_mixed_fusion", bool, False, _NCCL),
    )
}


class _Setter:
    """``flow.config.<name>(value)``: checks the value's type as OneFlow does, keeps it, warns once."""

    def __init__(self, setting: Setting) -> None:
        self._setting = setting

    def __call__(self, val: Any = None) -> None:
        s = self._setting
        if val is None:
            if s.arg_default is None:
                raise TypeError(f"flow.config.{s.name} takes a {s.type.__name__}; got no value")
            val = s.arg_default
        if type(val) is not s.type:  # OneFlow's ``assert type(val) is ...``: True is not an int here
            raise TypeError(f"flow.config.{s.name} takes a {s.type.__name__}; got {val!r}")
        ENV.options = (*((k, v) for k, v in ENV.options if k != s.name), (s.name, val))
        if s.name not in _warned:
            _warned.add(s.name)
            warnings.warn(f"flowlab accepts flow.config.{s.name} but does not act on it: {s.why} "
                          "(docs/oneflow-api.md)", stacklevel=2)

    def __repr__(self) -> str:
        return f"<flow.config setter {self._setting.name}>"


class _Group:
    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def __getattr__(self, name: str) -> _Setter:
        if name.startswith("__"):
            raise AttributeError(name)
        return _lookup(f"{self._prefix}.{name}")  # type: ignore[return-value]

    def __dir__(self) -> list[str]:
        return [n.partition(".")[2] for n in SETTINGS if n.startswith(self._prefix + ".")]


def _lookup(name: str) -> _Setter | _Group:
    if name in SETTINGS:
        return _Setter(SETTINGS[name])
    if any(n.startswith(name + ".") for n in SETTINGS):
        return _Group(name)
    close = difflib.get_close_matches(name, [*SETTINGS, *__all__], n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise AttributeError(f"flow.config has no setting {name!r}{hint}")


def __getattr__(name: str) -> _Setter | _Group:  # the declared SETTINGS, as OneFlow's module functions
    if name.startswith("__"):
        raise AttributeError(name)
    return _lookup(name)


def value(name: str) -> Any:
    """A setting's value as set (or OneFlow's default): ``flow.config.value("enable_model_io_v2")``."""
    if name not in SETTINGS:
        _lookup(name)  # raises, with suggestions
        raise KeyError(name)
    return dict(ENV.options).get(name, SETTINGS[name].default)


def legacy_model_io_enabled() -> bool:
    """OneFlow's ``flow.config.legacy_model_io_enabled()``: what ``enable_legacy_model_io`` was set to."""
    return bool(value("enable_legacy_model_io"))


__all__ = ["SETTINGS", "Setting", "cpu_device_num", "enable_debug_mode", "gpu_device_num", "legacy_model_io_enabled",
           "value"]
