"""Connecting to Ray: the loopback settings, starting a local cluster, and the Ray-wrapped host classes.

flowlab handles ``ray.init``'s details so that a user only names a cluster (``flow.env.ray(address)``) or asks
for a local one (``flow.env.ray()``): on one box every address stays on 127.0.0.1 (Ray otherwise rewrites a
loopback address to the machine's eth0 address and ``ray.init`` retries for minutes against a GCS listening on
loopback only), no dashboard, no usage statistics, no worker logs in the user's notebook.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from ..errors import FlowlabError

LOOPBACK = ("127.0.0.1", "localhost")


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
    """Connect this process to the cluster (once), or start a local one with a ``machine<i>`` resource per machine;
    check that every machine of the Plan has its resource. -> the ``ray`` module."""
    ray = import_ray()
    if not ray.is_initialized():
        if address is None:
            resources = {f"machine{i}": 1 for i in range(machine_num)}
            ray.init(num_cpus=machine_num, resources=resources, include_dashboard=False, log_to_driver=False,
                     _node_ip_address="127.0.0.1")
        else:
            host = address.removeprefix("ray://").rsplit(":", 1)[0]
            extra = {"_node_ip_address": "127.0.0.1"} if host in LOOPBACK else {}
            ray.init(address=address, log_to_driver=False, **extra)
    have = ray.cluster_resources()
    missing = [f"machine{i}" for i in range(machine_num) if have.get(f"machine{i}", 0) <= 0]
    if missing:
        raise ClusterError(f"the Ray cluster has no node with resource(s) {missing}: flowlab pins Plan machine i to "
                           f"the node started with resources={{'machine<i>': 1}} (it has {sorted(have)})")
    return ray


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
