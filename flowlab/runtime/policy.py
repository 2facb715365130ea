"""ExecutionPolicy: which executor runs a session's calls, decided once from the flags and the Plan, and why.

The run path is a ladder (docs/run-path.md). Protocol stepping (``Runtime.step``) is the semantics and always
there; every rung above it is a lowering of a call's captured Schedule (ir/schedule.py), proven equal to it:

    protocol      step the actor protocol, one scheduler thread (what flow.debug drives, act by act)
    threads       the protocol with each Plan thread's actors on its own OS thread (no replay layer)
    replay        later calls replay the first call's captured kernel calls; settle() writes the counters
    fused         runs of replayed kernels compiled into Numba segments
    lanes         a replay split into one lane per Plan thread, each on its own OS thread
    callgen       a fused job function's whole call as one generated Python function
    ray           a multi-machine Plan: the protocol on Ray machine processes

``decide`` reads the flags (flowlab/flags.py) once, when a session starts its runtime, and the Plan; the session
makes its runtime and its one executor (runtime/executor.py; call_path.make_executor) from the policy, and
``print(session.execution)`` shows it. What is still decided per call (and stays so, because it is about that
call, not the configuration): a call from a state no schedule starts at, or that is not idle, is stepped by the
protocol inside the replay executor (captured when it starts idle); a job function with a ``Tuple[...]``
parameter gets no generated call. A subscriber does not change the executor: a replayed call's act events are
built from its Schedule once it ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..flags import get as get_flag

if TYPE_CHECKING:
    from ..ir import Plan

LADDER = ("protocol", "threads", "replay", "fused", "lanes", "callgen", "ray")
WHAT = {
    "protocol": "protocol stepping, one scheduler thread",
    "threads": "protocol stepping, one OS thread per Plan thread",
    "replay": "replay of each call's captured Schedule",
    "fused": "fused Numba segments over replayed kernels",
    "lanes": "replay as one lane per Plan thread, on OS threads",
    "callgen": "a generated call per fused job function",
    "ray": "protocol on Ray machine processes",
}


@dataclass(frozen=True)
class Choice:
    """One rung of the ladder: taken or declined, and why."""

    executor: str
    taken: bool
    why: str

    def __str__(self) -> str:
        mark = "yes" if self.taken else "no "
        return f"{mark} {self.executor:<9} {WHAT[self.executor]}: {self.why}"


@dataclass(frozen=True)
class ExecutionPolicy:
    """Which executors run a session's calls (``choices`` in ladder order); ``executor`` names the one that runs
    a job function's steady-state calls."""

    choices: tuple[Choice, ...]
    context: str = "session"  # "session" or "flow.debug"

    def taken(self, executor: str) -> bool:
        for choice in self.choices:
            if choice.executor == executor:
                return choice.taken
        raise KeyError(f"no executor {executor!r}; the ladder is {', '.join(LADDER)}")

    def why(self, executor: str) -> str:
        return next(c.why for c in self.choices if c.executor == executor)

    @property
    def replay(self) -> bool:
        return self.taken("replay")

    @property
    def fuse(self) -> bool:
        return self.taken("fused")

    @property
    def lanes(self) -> bool:
        return self.taken("lanes")

    @property
    def callgen(self) -> bool:
        return self.taken("callgen")

    @property
    def ray(self) -> bool:
        return self.taken("ray")

    @property
    def parallel(self) -> bool:
        """Whether the runtime gets one OS thread per Plan thread (the threads executor, or lanes' threads)."""
        return self.taken("threads") or self.taken("lanes")

    @property
    def executor(self) -> str:
        """The top rung taken: what runs a job function's calls once they are captured (and fused)."""
        if self.ray:
            return "ray"
        for name in ("callgen", "lanes", "fused", "replay", "threads"):
            if self.taken(name):
                return name
        return "protocol"

    def to_payload(self) -> dict[str, Any]:
        return {"context": self.context, "executor": self.executor,
                "choices": [{"executor": c.executor, "taken": c.taken, "why": c.why, "what": WHAT[c.executor]}
                            for c in self.choices]}

    def __str__(self) -> str:
        lines = [f"execution ({self.context}): {self.executor} ({WHAT[self.executor]})"]
        lines.extend(f"  {choice}" for choice in self.choices)
        if self.replay:
            lines.append("  per call: a call from a state no schedule starts at, or with work queued, is stepped "
                         "by the protocol; one from an idle runtime is captured")
            lines.append("  observed: a subscriber (runtime.hooks) gets a replayed call's act events once the call "
                         "ran, built from its Schedule (the same acts, registers and act ids; ActEvent.executor "
                         "names the rung); to stop or inspect a call between two acts (a breakpoint), flow.debug "
                         "steps the protocol")
        return "\n".join(lines)

    def __repr__(self) -> str:
        declined = ", ".join(c.executor for c in self.choices if not c.taken)
        return f"<ExecutionPolicy {self.context}: {self.executor}; declined: {declined or 'none'}>"


def decide(plan: Plan, ray: bool = False, debugger: bool = False) -> ExecutionPolicy:
    """The policy for running ``plan``: in a session (``ray``: its machines are Ray processes), or for
    flow.debug's runtime (``debugger``: the protocol, act by act). Reads the flags replay, fuse, callgen and
    threads now, once."""
    from .threads import compute_threads, threads_setting

    gpu = any(t.gpu_device is not None for t in plan.tasks)
    machines = len({t.machine_id for t in plan.tasks})
    busy = len(compute_threads(plan))
    setting = threads_setting()
    choices: dict[str, tuple[bool, str]] = {"protocol": (True, "the reference semantics: every call can run here")}
    # OS threads per Plan thread: the Plan's choice unless the flag forces it
    if gpu:
        parallel = (False, "a GPU Plan acts on one host thread (its streams run the kernels asynchronously)")
    elif setting is not None:
        parallel = (setting, f"flag threads={'on' if setting else 'off'}")
    elif busy >= 2:
        parallel = (True, f"{busy} Plan threads compute")
    else:
        parallel = (False, f"{'one Plan thread computes' if busy == 1 else 'no Plan thread computes'}: "
                           "threads would add hand-offs only")
    # replay: a configuration that runs in this process on the host, with the flag on
    if debugger:
        replay = (False, "flow.debug steps the protocol act by act (the debugger drives it)")
    elif ray and machines > 1:
        replay = (False, f"{machines} machines on Ray: a capture sees the acts of one process")
    elif gpu:
        replay = (False, "a GPU Plan: replay captures host kernel calls; its streams order the acts")
    elif dynamic_blobs(plan):
        replay = (False, f"the Plan has dynamic blobs ({dynamic_blobs(plan)}, from tp.ListNumpy placeholders): a "
                         "captured schedule holds arrays of fixed shapes, so every call runs the protocol")
    elif not get_flag("replay"):
        replay = (False, "flag replay=off")
    else:
        replay = (True, "flag replay=on, one process, host kernels")
    if debugger or (ray and machines > 1):
        choices["threads"] = (False, replay[1])
    elif replay[0]:
        choices["threads"] = (False, "replay runs the calls" + (" (on lanes)" if parallel[0] else ""))
    else:
        choices["threads"] = parallel
    choices["replay"] = replay
    on = replay[0]
    fuse = get_flag("fuse")
    choices["fused"] = ((True, "flag fuse=on: after a few replays, once the kernels are on Numba") if on and fuse
                        else (False, "no replay" if not on else "flag fuse=off"))
    choices["lanes"] = ((True, parallel[1]) if on and parallel[0]
                        else (False, "no replay" if not on else parallel[1]))
    callgen = get_flag("callgen")
    if not on or not fuse:
        choices["callgen"] = (False, "no replay" if not on else "no fused segments (flag fuse=off)")
    elif not callgen:
        choices["callgen"] = (False, "flag callgen=off")
    elif choices["lanes"][0]:
        choices["callgen"] = (False, "calls replay on lanes (a generated call runs on the caller's thread only)")
    else:
        choices["callgen"] = (True, "flag callgen=on: once a job function's schedules are fused and compiled")
    if ray and machines > 1:
        choices["ray"] = (True, f"{machines} machines, Ray on")
    else:
        choices["ray"] = (False, "one machine" if machines == 1 else "Ray off: the machines run in this process")
    return ExecutionPolicy(tuple(Choice(name, *choices[name]) for name in LADDER),
                           "flow.debug" if debugger else "session")


def dynamic_blobs(plan: Plan) -> str:
    """The rule that keeps a Plan with dynamic blobs on the protocol (runtime/dynamic.py): "" when it has none,
    else the first such blob and how many there are, for the reason ``print(session.execution)`` shows."""
    lbns = sorted({lbn for d in plan.regst_descs.values() for lbn, b in d.lbi2blob_desc.items() if b.is_dynamic})
    return "" if not lbns else f"{lbns[0]}" + (f" and {len(lbns) - 1} more" if len(lbns) > 1 else "")
