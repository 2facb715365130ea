"""Connecting to Ray: the loopback settings, starting a local cluster, and the Ray-wrapped host classes.

flowlab handles ``ray.init``'s details so that a user only names a cluster (``flow.env.ray(address)``) or asks
for a local one (``flow.env.ray()``): on one box every address stays on 127.0.0.1 (Ray otherwise rewrites a
loopback address to the machine's eth0 address and ``ray.init`` retries for minutes against a GCS listening on
loopback only), no dashboard, no usage statistics, no worker logs in the user's notebook.

Every wait is bounded (issue 25): Ray's own connect retries against an address where no cluster answers for
minutes. ``connect`` first opens a TCP connection to the address (an error at once where nothing listens), then
runs ``ray.init`` in a helper thread for at most ``FLOWLAB_RAY_CONNECT_TIMEOUT`` seconds (default 15).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from ..errors import FlowlabError
from ..flags import get

LOOPBACK = ("127.0.0.1", "localhost")
CHECK = ("check that a Ray cluster runs there (`ray start --head --port=<port>` on its head machine, then `ray "
         "status` there), that the address is the head's GCS address (host:6379 unless --port said otherwise; "
         "ray://host:10001 for Ray Client), and that no firewall blocks the port")


class ClusterError(FlowlabError, RuntimeError):
    """The Ray cluster cannot run this Plan: Ray missing, unreachable, or lacking a machine's resource."""


def loopback_env() -> None:
    """Environment for Ray on one box; must be set before ``import ray`` (it reads some of it at import)."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # Fewer Python processes starting at once: the raylet gives its agents 15 s to publish their ports, and on a
    # small loaded box every extra interpreter (prestarted workers) slows them past it.
    os.environ.setdefault("RAY_enable_worker_prestart", "0")
    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")


def import_ray() -> Any:
    if "ray" not in sys.modules:
        loopback_env()
    try:
        import ray
    except ImportError as err:
        raise ClusterError("running machines on Ray needs the `distributed` extra: pip install 'flowlab[distributed]'"
                           ) from err
    return ray


def connect(address: str | None, machine_num: int) -> Any:
    """Connect this process to the cluster (once, within ``connect_timeout_s()``), or start a local one with a
    ``machine<i>`` resource per machine; check that every machine of the Plan has its resource. -> ``ray``."""
    ray = import_ray()
    if not ray.is_initialized():
        if address is None:
            resources = {f"machine{i}": 1 for i in range(machine_num)}
            ray.init(num_cpus=machine_num, resources=resources, include_dashboard=False, log_to_driver=False,
                     _node_ip_address="127.0.0.1")
        else:
            _init_within(ray, address, connect_timeout_s())
    have = ray.cluster_resources()
    missing = [f"machine{i}" for i in range(machine_num) if have.get(f"machine{i}", 0) <= 0]
    if missing:
        raise ClusterError(f"the Ray cluster has no node with resource(s) {missing}: flowlab pins Plan machine i to "
                           f"the node started with resources={{'machine<i>': 1}} (it has {sorted(have)})")
    return ray


def connect_timeout_s() -> float:
    return get("ray_connect_timeout")


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``host:port`` or ``ray://host:port``; None for ``auto`` or an address without a port."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def probe(address: str, timeout: float) -> None:
    """A TCP connection to the address within ``timeout`` s, else a ClusterError saying why and what to check."""
    target = host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout).close()
    except OSError as err:
        why = "timed out" if isinstance(err, TimeoutError) else (err.strerror or type(err).__name__).lower()
        raise ClusterError(f"no Ray cluster answers at {address}: connecting to {target[0]}:{target[1]} failed "
                           f"({why}); {CHECK}") from None


class _NoThreadWarning(logging.Filter):
    """Ray warns when ray.init runs outside the main thread that it set no SIGTERM handler: noise for a user."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


_pending: list[threading.Thread] = []  # a connection attempt given up on that is still running


def _init_within(ray: Any, address: str, timeout: float) -> None:
    """``ray.init(address=...)`` in a helper thread, waited for at most ``timeout`` s. An attempt given up on
    keeps running (Ray's retries cannot be cancelled); if it connects after all, it disconnects again, and until
    it has ended a new attempt is refused rather than started beside it."""
    if _pending and _pending[0].is_alive():
        raise ClusterError(f"an earlier attempt to connect to a Ray cluster has not ended yet (Ray is still "
                           f"retrying it); try again in a minute, or restart the Python process. Then: {CHECK}")
    _pending.clear()
    probe(address, timeout)
    host = address.removeprefix("ray://").rsplit(":", 1)[0]
    extra = {"_node_ip_address": "127.0.0.1"} if host in LOOPBACK else {}
    lock, state = threading.Lock(), {"done": False, "abandoned": False, "error": None}

    def init() -> None:
        try:
            ray.init(address=address, log_to_driver=False, **extra)
        except BaseException as err:  # handed to the waiting thread
            state["error"] = err
        with lock:
            state["done"] = True
            late = state["abandoned"] and state["error"] is None
        if late:
            ray.shutdown()

    quiet = _NoThreadWarning()
    logger = logging.getLogger("ray._private.worker")
    logger.addFilter(quiet)
    try:
        thread = threading.Thread(target=init, name=f"flowlab-ray-connect-{address}", daemon=True)
        thread.start()
        thread.join(timeout)
    finally:
        logger.removeFilter(quiet)
    with lock:
        if not state["done"]:
            state["abandoned"] = True
            _pending.append(thread)
            listens = "something listens there, but " if host_port(address) else ""
            raise ClusterError(f"the Ray cluster at {address} did not answer within {timeout:.0f} s: {listens}"
                               f"ray.init did not connect; {CHECK}. A slow cluster may need more time: "
                               "FLOWLAB_RAY_CONNECT_TIMEOUT=<seconds>")
    err = state["error"]
    if err is not None:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ClusterError(f"could not connect to the Ray cluster at {address}: {first}; {CHECK}") from err


@cache
def remote_host_class() -> Any:
    """MachineHost as a Ray actor class; it takes no CPU (its node's resource pins it)."""
    ray = import_ray()
    from .host import MachineHost

    return ray.remote(num_cpus=0)(MachineHost)


@contextmanager
def one_box_cluster(machine_num: int = 2, attempts: int = 3) -> Iterator[str]:
    """A Ray cluster of ``machine_num`` nodes on this box, node i with resource ``machine<i>``, all on loopback,
    with this process connected as its driver (tests and benchmarks; a real cluster is started with ``ray
    start --resources='{"machine<i>": 1}'`` on each machine). Yields its address; shuts everything down after."""
    ray = import_ray()
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_log_monitor": False,
            "object_store_memory": 80 * 2**20}
    cluster = None
    try:
        for attempt in range(attempts):
            try:
                cluster = Cluster(initialize_head=True, head_node_args={
                    **node, "resources": {"machine0": 1}, "include_dashboard": False})
                for i in range(1, machine_num):
                    cluster.add_node(**node, resources={f"machine{i}": 1})
                break
            except Exception as err:
                # A raylet gives its Python agents 15 s (fixed in Ray) to publish their ports; on a loaded box
                # they may miss it and the node aborts. Start again from nothing.
                if cluster is not None:
                    cluster.shutdown()
                    cluster = None
                if attempt == attempts - 1 or "timed out during startup" not in str(err):
                    raise
        assert cluster is not None
        cluster.wait_for_nodes(timeout=120)
        ray.init(address=cluster.address, log_to_driver=False, _node_ip_address="127.0.0.1")
        yield cluster.address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
