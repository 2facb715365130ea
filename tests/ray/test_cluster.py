"""The test cluster itself: two nodes, each with its machine resource, reachable on loopback."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray", reason="the Ray tests need the `distributed` extra")
pytestmark = pytest.mark.ray


def test_two_nodes_with_one_machine_resource_each(ray_cluster):
    nodes = [n for n in ray.nodes() if n["Alive"]]
    assert len(nodes) == 2
    assert sorted(k for n in nodes for k in n["Resources"] if k.startswith("machine")) == ["machine0", "machine1"]
    assert {n["NodeManagerAddress"] for n in nodes} == {"127.0.0.1"}
