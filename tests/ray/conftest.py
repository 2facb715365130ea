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

from flowlab.distributed.cluster import loopback_env, one_box_cluster

loopback_env()  # before Ray is imported: it reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER once, at import
ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra: pip install -e '.[distributed]'")

START_TIMEOUT_S = 300  # a loaded 2-core box starts the two nodes in 10-40 s (retried when a raylet aborts)


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
    with _Deadline(START_TIMEOUT_S, "starting the two-node Ray test cluster"):
        starting = one_box_cluster(2)
        address = starting.__enter__()
    try:
        yield address
    finally:
        starting.__exit__(None, None, None)


@pytest.fixture
def two_machines(ray_cluster):
    """flow.env set for two machines on the test cluster (the autouse fixture resets it after the test)."""
    import flowlab as flow

    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    flow.env.ray(ray_cluster)
    return ray_cluster
