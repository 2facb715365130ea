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
built from its Schedule once it ran. One choice is confirmed later, once: lanes, taken on the Plan's facts
(``_lanes_decision``), are timed against one thread on the first fused replays (replay/lanes.py ``Trial``,
``lanes_verdict``), and the verdict replaces the lanes, threads and callgen choices (``measured``): the run mode
never keeps lanes that lose to one thread.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
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
    # lanes taken on the Plan's facts, to be confirmed once by timing the first fused replays (lanes.py ``Trial``)
    lanes_trial: bool = False
    callgen_without_lanes: bool = False  # callgen declined only because the calls replay on lanes
    # what that measurement decided (``settle_lanes``): the choices it replaces, once per session
    measured: dict[str, Choice] = field(default_factory=dict, compare=False, hash=False)

    def current(self) -> tuple[Choice, ...]:
        """The choices as they stand now: the Plan's and the flags', with the lanes measurement's in their place."""
        measured = self.measured
        return tuple(measured.get(c.executor, c) for c in self.choices) if measured else self.choices

    def taken(self, executor: str) -> bool:
        for choice in self.current():
            if choice.executor == executor:
                return choice.taken
        raise KeyError(f"no executor {executor!r}; the ladder is {', '.join(LADDER)}")

    def why(self, executor: str) -> str:
        return next(c.why for c in self.current() if c.executor == executor)

    def settle_lanes(self, won: bool, why: str) -> None:
        """Record the lanes trial's verdict (``lanes_verdict``), once: lanes kept, or declined for one thread (the
        replay on the caller's thread, the lanes' programs merged: lanes.drop_lanes; and ``callgen`` when the flags
        allow it, as on a one-thread Plan)."""
        if "lanes" in self.measured:
            return
        self.measured["lanes"] = Choice("lanes", won, f"{self.why('lanes')}; {why}")
        if not won:
            self.measured["threads"] = Choice("threads", False, "replay runs the calls, on one thread (lanes lost)")
            if self.callgen_without_lanes:
                self.measured["callgen"] = Choice("callgen", True, "lanes lost to one thread: once a job "
                                                                   "function's schedules are fused and compiled")

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
                            for c in self.current()]}

    def __str__(self) -> str:
        lines = [f"execution ({self.context}): {self.executor} ({WHAT[self.executor]})"]
        lines.extend(f"  {choice}" for choice in self.current())
        if self.replay:
            lines.append("  per call: a call from a state no schedule starts at, or with work queued, is stepped "
                         "by the protocol; one from an idle runtime is captured")
            lines.append("  observed: a subscriber (runtime.hooks) gets a replayed call's act events once the call "
                         "ran, built from its Schedule (the same acts, registers and act ids; ActEvent.executor "
                         "names the rung); to stop or inspect a call between two acts (a breakpoint), flow.debug "
                         "steps the protocol")
        return "\n".join(lines)

    def __repr__(self) -> str:
        declined = ", ".join(c.executor for c in self.current() if not c.taken)
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
    else:
        parallel = _lanes_decision(busy)
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
    choices["lanes"] = ((True, parallel[1] + ("; replays time lanes against one thread before keeping them"
                                              if setting is None else "")) if on and parallel[0]
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
                           "flow.debug" if debugger else "session",
                           lanes_trial=choices["lanes"][0] and setting is None,
                           callgen_without_lanes=on and fuse and callgen and choices["lanes"][0])


# -- lanes or one thread (helper dp's part: ``_lanes_decision``, ``lanes_verdict`` and their constants) ---------
TRIAL_PAIRS = 3  # replays timed on lanes and as many on one thread, alternating, before the verdict
TRIAL_MARGIN = 0.9  # lanes are kept only when their median call takes at most this share of one thread's


def available_cores() -> int:
    """The cores this process may run on (its affinity mask: a container or ``taskset`` limits it below
    ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity masks (macOS)
        return os.cpu_count() or 1


def blas_threads() -> int | None:
    """The most threads a loaded BLAS library runs a call on (threadpoolctl; None where it is not installed)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return max((int(info.get("num_threads", 1)) for info in threadpool_info() if info.get("user_api") == "blas"),
               default=None)


def _lanes_decision(busy: int) -> tuple[bool, str]:
    """Whether a Plan's compute threads run on OS threads at once (lanes when replayed, the protocol's threads
    otherwise), from what is known before any call: how many Plan threads compute, the cores this process may
    use, and the threads each BLAS call already takes. Lanes that pass are measured against one thread on the
    first replays (``lanes_verdict``): what only timing shows (kernels too small for the hand-offs, a loaded box)."""
    if busy < 2:
        return False, (f"{'one Plan thread computes' if busy == 1 else 'no Plan thread computes'}: "
                       "threads would add hand-offs only")
    cores = available_cores()
    if cores < 2:
        return False, (f"{busy} Plan threads compute, but this process may run on 1 core "
                       "(os.sched_getaffinity): the threads would take turns on it, adding hand-offs only")
    blas = blas_threads()
    if blas is not None and blas > 1 and min(busy, cores) * blas > cores:
        return False, (f"{busy} Plan threads compute, but each BLAS call already runs {blas} threads on the "
                       f"{cores} cores: {min(busy, cores)} lanes would oversubscribe them "
                       "(set OPENBLAS_NUM_THREADS=1 for lanes)")
    return True, f"{busy} Plan threads compute on {cores} cores"


def lanes_verdict(serial: list[float], lanes: list[float], fused: bool = True) -> tuple[bool, str]:
    """Lanes or one thread, from the seconds of replays timed each way (alternating, so the box's load meets
    both; ``fused``: the lanes' segments ran, else their steps one by one): lanes stay only when their median call
    is at most ``TRIAL_MARGIN`` of one thread's; even, one thread wins (no hand-offs, no second core taken, and a
    generated call)."""
    one, many = statistics.median(serial), statistics.median(lanes)
    said = (f"measured {many * 1e3:.3g} ms a call on lanes vs {one * 1e3:.3g} ms on one thread "
            f"(medians of {len(lanes)} and {len(serial)} replays{', fused' if fused else ', not fused'})")
    if many <= TRIAL_MARGIN * one:
        return True, said
    return False, f"{said}: lanes lose or gain under {100 * (1 - TRIAL_MARGIN):.0f} %, one thread runs the calls"


def dynamic_blobs(plan: Plan) -> str:
    """The rule that keeps a Plan with dynamic blobs on the protocol (runtime/dynamic.py): "" when it has none,
    else the first such blob and how many there are, for the reason ``print(session.execution)`` shows."""
    lbns = sorted({lbn for d in plan.regst_descs.values() for lbn, b in d.lbi2blob_desc.items() if b.is_dynamic})
    return "" if not lbns else f"{lbns[0]}" + (f" and {len(lbns) - 1} more" if len(lbns) > 1 else "")
