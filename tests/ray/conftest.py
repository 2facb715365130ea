"""A two-node Ray cluster on this box for the whole test session (custom resources ``machine0``/``machine1``).

Everything stays on loopback (``flowlab.distributed.cluster.loopback_env``, set before Ray is imported, plus
127.0.0.1 for every node), no dashboard, no usage stats, no log monitor or prestarted workers (fewer interpreters
starting at once on 2 shared cores). Start is bounded; the finalizer shuts the driver and the cluster down (never
``ray stop``: it would kill every Ray on the box). Skipped where Ray is not installed.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from flowlab.distributed.cluster import loopback_env

loopback_env()  # before Ray is imported: it reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER once, at import
ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra: pip install -e '.[distributed]'")

START_ATTEMPTS = 3
START_TIMEOUT_S = 240  # a loaded 2-core box starts the two nodes in 10-40 s; past this, fail instead of hanging
NODE = {"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_log_monitor": False,
        "object_store_memory": 80 * 2**20}


class _Deadline:
    """SIGALRM after ``seconds`` in the main thread: ray.init can retry for minutes when an address is wrong."""

    def __init__(self, seconds: int, what: str) -> None:
        self.seconds, self.what = seconds, what

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            def fail(signum, frame):
                raise TimeoutError(f"{self.what} took more than {self.seconds} s")

            self.old = signal.signal(signal.SIGALRM, fail)
            signal.alarm(self.seconds)

    def __exit__(self, *exc: object) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.alarm(0)
            signal.signal(signal.SIGALRM, self.old)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """The address of a running two-node cluster, with this process connected to it as the driver."""
    from ray.cluster_utils import Cluster

    cluster = None
    try:
        with _Deadline(START_TIMEOUT_S, "starting the two-node Ray test cluster"):
            for attempt in range(START_ATTEMPTS):
                try:
                    cluster = Cluster(initialize_head=True,
                                      head_node_args={**NODE, "resources": {"machine0": 1}, "include_dashboard": False})
                    cluster.add_node(**NODE, resources={"machine1": 1})
                    break
                except Exception as err:
                    # A raylet gives its Python agents 15 s (fixed in Ray) to start; on a loaded box they may miss
                    # it and the node aborts. Start again from nothing.
                    if cluster is not None:
                        cluster.shutdown()
                        cluster = None
                    if attempt == START_ATTEMPTS - 1 or "timed out during startup" not in str(err):
                        raise
            cluster.wait_for_nodes(timeout=START_TIMEOUT_S)
            ray.init(address=cluster.address, log_to_driver=False, _node_ip_address="127.0.0.1")
        yield cluster.address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if cluster is not None:
            cluster.shutdown()


@pytest.fixture
def two_machines(ray_cluster):
    """flow.env set for two machines on the test cluster (the autouse fixture resets it after the test)."""
    import flowlab as flow

    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(ray_cluster)
    return ray_cluster
