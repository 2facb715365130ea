"""The machinery that runs a Plan's machines in separate processes (flowlab/distributed/wiring.py), without Ray:
each machine gets its own Runtime with stand-ins for its peers on other machines, and a test loop carries their
batches (shuffled, so a batch may arrive before an earlier one from the same machine). Training the data-parallel
MLP on ["0:0", "1:0"] this way gives the in-process results bit for bit."""

from __future__ import annotations

import random

import numpy as np

import flowlab as flow
from flowlab.distributed.wiring import Inbox, Link, localize
from flowlab.runtime import JobInstance, Runtime
from flowlab.session import call_instances
from tests.ray.programs import data, mlp_train


class Machines:
    """Two machines, each its own Runtime over the same Plan, wired only through batches."""

    def __init__(self, plan, seed: int) -> None:
        self.rts, self.links, self.inboxes = {}, {}, {}
        for m in (0, 1):
            rt = Runtime(plan)
            self.links[m] = Link(m)
            localize(rt, m, self.links[m])
            self.rts[m], self.inboxes[m] = rt, Inbox(rt)
        self.rng = random.Random(seed)
        self.delivered = 0

    def run(self, instances: list[JobInstance]) -> None:
        for instance in instances:
            self.rts[0].launch(instance)
        flight = []
        while True:
            for m, rt in self.rts.items():
                while rt.step(False) is not None:
                    pass
                flight += self.links[m].take()
            if not flight:  # quiet: every register crossing machines has arrived and come back
                assert instances[-1].finished, "no machine can act and nothing is in flight"
                return
            self.rng.shuffle(flight)  # batches from one machine may arrive out of order: the inbox reorders them
            to_machine, batch = flight.pop()
            self.inboxes[to_machine].apply(batch)
            self.delivered += 1


def variables_of(rt: Runtime) -> dict[str, np.ndarray]:
    out = {}
    for actor in rt.actors.values():
        op = actor.task.exec_sequence[0]
        if op.op_type == "variable" and op.name not in out:
            out[op.name] = rt.regsts[next(iter(actor.writable))][0].blobs[op.output_lbns[0]].copy()
    return out


def test_two_machines_wired_by_batches_train_like_one_process():
    flow.env.machine(["127.0.0.1", "127.0.0.2"])
    job = mlp_train(["0:0", "1:0"])
    want = [job(*data(i)).copy() for i in range(3)]
    want_vars = {k: np.array(v) for k, v in flow.get_all_variables().items()}
    session = flow.default_session()
    desc = session.function_descs["train_job"]

    machines = Machines(session.plan, seed=7)
    machines.run([JobInstance("System-ModelInit")])
    got = []
    for i in range(3):
        for rt in machines.rts.values():  # as the session's calls: its first on the reference tier (kernels/tiered.py)
            rt.tier_phase.numba = i >= 1
        pulled = [None]
        machines.run(call_instances(desc, list(data(i)), pulled))
        got.append(pulled[0].copy())
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    for name, value in variables_of(machines.rts[0]).items():
        np.testing.assert_array_equal(value, want_vars[name], err_msg=name)
    assert machines.links[0].messages > 0 and machines.links[1].messages > 0
    assert machines.rts[1].actors and all(a.task.machine_id == 1 for a in machines.rts[1].actors.values())
    for m, rt in machines.rts.items():  # quiet: no register is still being read, on either side of a link
        held = [(rid, r.index, r.reading_cnt) for rid, rs in rt.regsts.items() for r in rs if r.reading_cnt]
        assert held == [], f"machine {m}"


def test_batches_from_one_machine_are_applied_in_the_order_sent():
    applied = []

    class Recording(Inbox):
        def _apply_one(self, message):
            applied.append(message)

    inbox = Recording(None)  # type: ignore[arg-type]
    link = Link(1)
    batches = []
    for i in range(5):
        link.send(0, ("close", i))
        batches += [b for _, b in link.take()]
    for batch in (batches[3], batches[0], batches[4], batches[2], batches[1]):
        inbox.apply(batch)
    assert [m[1] for m in applied] == [0, 1, 2, 3, 4]
