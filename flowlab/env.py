"""``flow.env``: the machines of a cluster (OneFlow's ``python/framework/env_util.py``), set before the session
starts. flowlab runs every machine in one process for now; the machine list decides which machine ids a
placement may name (``"1:0-1"`` needs two machines) and the default placement (every device of every machine).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .frontend.scope import ENV


def machine(*addrs: Any) -> None:
    """``flow.env.machine(["192.168.1.12", "192.168.1.11"])`` or ``[{"addr": ip, "ctrl_port_agent": p}, ...]``:
    one entry per machine, machine id = its index, machine 0 the master. Addresses must be distinct."""
    entries = list(addrs[0]) if len(addrs) == 1 and isinstance(addrs[0], (list, tuple)) else list(addrs)
    if not entries:
        raise ValueError("flow.env.machine needs at least one machine, e.g. flow.env.machine(['192.168.1.12'])")
    names = []
    for i, entry in enumerate(entries):
        addr = entry.get("addr") if isinstance(entry, Mapping) else entry
        if not isinstance(addr, str) or not addr:
            raise ValueError(f"flow.env.machine entry {i} must be an address string or a dict with 'addr'; "
                             f"got {entry!r}")
        names.append(addr)
    duplicates = sorted({a for a in names if names.count(a) > 1})
    if duplicates:
        raise ValueError(f"flow.env.machine addresses must be distinct; {duplicates} appear more than once")
    ENV.machines = tuple(names)


def ctrl_port(port: int) -> None:
    """The control port, the same on every machine (OneFlow picks one itself only for a single machine)."""
    ENV.ctrl_port = _port(port, "ctrl_port")


def data_port(port: int) -> None:
    ENV.data_port = _port(port, "data_port")


def _port(port: Any, what: str) -> int:
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ValueError(f"flow.env.{what} takes a port number 1-65535; got {port!r}")
    return port


def ray(address: str | None = None) -> None:
    """Run the machines of ``flow.env.machine`` on a Ray cluster (the ``distributed`` extra): ``address`` names a
    running cluster (``"127.0.0.1:6379"``, ``"ray://host:10001"``, ``"auto"``) whose node for Plan machine ``i``
    was started with the custom resource ``machine<i>``; None starts a local one-node cluster with every
    ``machine<i>`` resource. Machine 0 runs in this process (push, pull and main jobs, as OneFlow's master), every
    other machine in a Ray actor pinned to its resource. Set before the session starts."""
    if address is not None and (not isinstance(address, str) or not address):
        raise ValueError(f"flow.env.ray takes a cluster address string or None (start a local one); got {address!r}")
    ENV.ray, ENV.ray_address = True, address


def machine_num() -> int:
    return ENV.machine_num


def log_dir(val: str) -> None:
    """OneFlow's log directory: debug mode (``flow.config.enable_debug_mode``) writes its files under
    ``<val>/<hostname>/``, as OneFlow's LogDir() (default ``./log``). Set before the session starts."""
    if type(val) is not str or not val:  # OneFlow: assert type(val) is str
        raise TypeError(f"flow.env.log_dir takes a directory path string; got {val!r}")
    ENV.log_dir = val


__all__: Sequence[str] = ["ctrl_port", "data_port", "log_dir", "machine", "machine_num", "ray"]


def init() -> bool:
    """OneFlow's ``flow.env.init()``: starts the environment from the config set so far, returning whether it did.
    flowlab's environment needs no start (every machine runs in this process), so this only says yes."""
    return True
