"""Every wait on Ray is bounded (issue 25): connecting to an address where no cluster runs, or where something
listens but never answers as Ray's GCS, fails within seconds with a ClusterError naming the address and what to
check. Each case runs in a fresh process, so it is a first connection (this pytest process may already be the
driver of the test cluster)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, sys, time
import numpy as np
import flowlab as flow
import flowlab.typing as tp

flow.env.machine(["127.0.0.1", "127.0.0.2"])
flow.env.ray(sys.argv[1])

@flow.global_function()
def job(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
    with flow.scope.placement("cpu", "1:0"):
        y = x * 2.0
    return y

start = time.monotonic()
try:
    job(np.ones(4, np.float32))
    outcome = {"error": None}
except Exception as err:
    outcome = {"error": type(err).__name__, "message": str(err)}
outcome["seconds"] = time.monotonic() - start
print("RESULT " + json.dumps(outcome), flush=True)
os._exit(0)  # an abandoned connection attempt may still run in a daemon thread: do not wait for it
"""


def first_call(address: str, **env: str) -> dict:
    child_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run([sys.executable, "-c", CHILD, address], capture_output=True, text=True, timeout=90,
                          env=child_env, cwd=ROOT)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result; rc={proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return json.loads(lines[-1].removeprefix("RESULT "))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_cluster_at_the_address_fails_within_seconds_naming_it():
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    outcome = first_call(address)
    assert outcome["error"] == "ClusterError", outcome
    assert address in outcome["message"] and "ray start" in outcome["message"], outcome["message"]
    assert outcome["seconds"] < 30, outcome  # the first call: trace, compile, import Ray (~5 s), then refused


def test_a_port_that_accepts_but_never_answers_fails_within_the_connect_timeout():
    with socket.socket() as server:  # accepts TCP connections (the backlog), never says a word
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        address = f"127.0.0.1:{server.getsockname()[1]}"
        start = time.monotonic()
        outcome = first_call(address, FLOWLAB_RAY_CONNECT_TIMEOUT="3")
        assert time.monotonic() - start < 60
    assert outcome["error"] == "ClusterError", outcome
    assert address in outcome["message"] and "did not answer within 3 s" in outcome["message"], outcome["message"]
    assert "FLOWLAB_RAY_CONNECT_TIMEOUT" in outcome["message"]
    assert outcome["seconds"] < 30, outcome  # with the 3 s bound; unbounded, Ray retried for minutes
