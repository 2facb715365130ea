"""A job function's fused replayed calls as one generated Python function: one frame and the Numba call(s).

A fused replay (layer.py, fused.py) runs a step's kernels in one Numba call, but the call around it is Python:
the session checks the arguments, makes a JobInstance per push, job and pull, launches them into the runtime's
buffers, copies the variables a failure could leave half-written, the segment fetches the pushed arrays from
those buffers and hands the pulled copies back, the notifies finish the instances, and the result is put together.
For a 64-32-10 MLP that was ~60 Python and C calls, about as long as the kernels themselves.

Once the layer has fused a launch list's schedule and its segments are compiled, the session asks ``generate_call``
for one function per job function, written out as Python source (``GeneratedCall.source``; print it) and compiled
with ``exec``. One branch per fused schedule of the launch list (a call starting from another order of rotating
registers has its own schedule), each with the constants written in: the placeholders' shapes, dtypes and strides
(the general path's ``exact_inputs``; a tp.ListNumpy one's per device), the copies of the safety snapshot
(call_guard.py), the segments' arenas, the caller's arrays passed straight to the segments in place of the pushes'
buffers and fresh arrays for the pulled copies, and the layer's bookkeeping (``ReplayLayer.replay``'s, the same
statements). No JobInstance is made: a replayed call starts with the launch buffers empty (it starts from a known
idle state) and leaves them empty, so the only protocol state its instances move is the launch counter, which the
function moves. tests/replay/test_replay_proof.py and tests/replay/test_callgen.py check it bit for bit against the
protocol.

The function hands the call to the session's general path (``CallSite.general``), before doing anything, for any
call it is not sure to run as the general path would: other arguments (the general path checks and explains them at
the user's line), a runtime not at one of its schedules' start states, a closed or replaced runtime, a replaced
SIGINT handler. A failure inside is handled as the general path handles it (the layer forgets its state, the
session cancels the call and restores the snapshot, a deferred Ctrl-C is delivered). A subscriber changes nothing:
the call's act events are built from its schedule after it ran. ``FLOWLAB_CALLGEN=0`` turns it off.
"""

from __future__ import annotations

import linecache
import re
import textwrap
from _signal import getsignal
from collections.abc import Callable
from dataclasses import dataclass
from threading import get_ident
from typing import TYPE_CHECKING, Any

import numpy as np

from ..call_guard import INTERRUPTS, MAIN_THREAD, SIGINT, CallGuard, DeferringHandler, cancel_then_deliver
from ..errors import KernelError, kernel_error
from ..flags import get
from .fused import Segment
from .layer import MAX_PENDING_RUNS, Notifies, ReplayLayer, compiled

if TYPE_CHECKING:
    from ..runtime.actor import Actor
    from .capture import CapturedCall


GENERATED = "generated"


def callgen_enabled() -> bool:
    return get("callgen")


class NotGenerated(Exception):
    """Why a schedule cannot be run by a generated call (it stays on the layer's replay)."""


@dataclass
class CallSite:
    """What the session knows of one job function's calls; the generator knows no Session beyond these."""

    job_name: str
    params: tuple[str, ...]  # the placeholders' names, in order
    specs: tuple[tuple[tuple[int, ...], np.dtype, tuple[int, ...]], ...]  # shape, dtype, C strides (of a piece)
    result: int | None  # the pull whose array is the call's result itself (one tp.Numpy blob); None: ``finish``
    finish: Callable[[list[np.ndarray]], Any]  # the result from the pulled arrays, in pull order
    dispatch: Callable[[list[Any], Any], None]  # hands watched values and the result to the watch handlers
    guard: CallGuard  # the launch list's pre-call safety snapshot
    cancel: Callable[[], None]  # cancels a failed call (restores ``guard``, rebuilds the runtime)
    session: Any  # checked each call: ``session.status is running`` and ``session.runtime`` is the runtime
    running: Any
    general: Callable[[tuple[Any, ...], dict[str, Any]], Any]  # the session's general path, for a call not taken
    pieces: tuple[int, ...] = ()  # per placeholder: 0, or a tp.ListNumpy one's device count (its arrays)


class GeneratedCall:
    """The compiled function (``fn(args, kwargs)``) and its source, registered with linecache so that a traceback
    through it shows its lines."""

    def __init__(self, job_name: str, source: str, namespace: dict[str, Any], schedules: list[CapturedCall]) -> None:
        self.job_name, self.source, self.schedules = job_name, source, schedules
        self.filename = f"<flowlab generated call of {job_name}>"
        linecache.cache[self.filename] = (len(source), None, source.splitlines(True), self.filename)
        exec(compile(source, self.filename, "exec"), namespace)
        self.fn: Callable[[tuple[Any, ...], dict[str, Any]], Any] = namespace["call"]
        self.namespace = namespace

    @property
    def runs(self) -> int:
        """How many calls this function ran (the others it handed to the general path)."""
        return int(self.namespace["runs"])

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return (f"<generated call of {self.job_name}: {len(self.schedules)} schedule(s), "
                f"{self.source.count(chr(10))} lines; print(.source) shows them>")


def ready(schedule: CapturedCall) -> bool:
    """Whether every segment of a fused schedule has finished compiling (or failed to): then it can be tried."""
    return compiled(schedule)


class _Source:
    """Lines of the function, and the objects its names stand for."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {}
        self.ids: dict[int, str] = {}

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def name(self, obj: Any, prefix: str) -> str:
        """A global name for ``obj`` (the same object always gets the same name)."""
        found = self.ids.get(id(obj))
        if found is not None:
            return found
        name = f"{prefix}{sum(n.startswith(prefix) and n[len(prefix):].isdigit() for n in self.names)}"
        self.names[name] = obj
        self.ids[id(obj)] = name
        return name


def generate_call(site: CallSite, layer: ReplayLayer, key: tuple[str, ...]) -> GeneratedCall | None:
    """The generated call over every fused schedule of ``key`` that it can run (each schedule's ``callgen`` says
    "generated" or why not); None when there is none."""
    rt = layer.rt
    layer.compiled_guards()  # a guard taken while the segments compiled is wider than a compiled call needs
    schedules, starts = [], []
    interned = {id(state): state for state in layer.states}  # a schedule is filed under its start state's id
    for (k, start), schedule in layer.schedules.items():
        if k != key or schedule.fused is None or not ready(schedule):
            continue
        try:
            _check(site, layer, schedule)
        except NotGenerated as why:
            schedule.callgen = str(why)
            continue
        schedule.callgen = GENERATED
        schedules.append(schedule)
        starts.append(interned[start])
    if not schedules:
        return None
    src = _Source()
    src.names.update(
        runs=0, general=site.general, ndarray=np.ndarray, empty=np.empty, copyto=np.copyto, lock=site.session.lock,
        concatenate=np.concatenate,
        session=site.session, RUNNING=site.running, rt=rt, layer=layer, get_ident=get_ident, MAIN_THREAD=MAIN_THREAD,
        getsignal=getsignal, SIGINT=SIGINT, Wrapper=DeferringHandler, interrupts=INTERRUPTS, guard=site.guard,
        MAX_PENDING_RUNS=MAX_PENDING_RUNS, watch_buffer=rt.buffers[_watch_buffer_name()], dispatch=site.dispatch,
        finish=site.finish, kernel_failed=_kernel_failed(rt.plan), fail=_fail(layer, site.cancel),
        mirrored_list=_mirrored_list())
    args = [f"in_{re.sub(r'[^0-9A-Za-z_]', '_', p)}" for p in site.params]
    pulls = len(key) - len(site.params) - 1
    src.emit(0, f"# Generated by flowlab (replay/callgen.py): the fused replayed calls of {site.job_name}, one branch")
    src.emit(0, "# per schedule. general: the session's general path runs a call this function does not take.")
    src.emit(0, "def call(args, kwargs):")
    src.emit(1, "global runs  # calls this function ran (GeneratedCall.runs)")
    _emit_arguments(src, site, args)
    src.emit(1, "with lock:")
    src.emit(2, "known = layer.known")
    src.emit(2, "if (known is None or known[1] != rt._seq or known[2] != rt.launched or rt.layer is not layer")
    src.emit(4, "or rt.closed or session.runtime is not rt or session.status is not RUNNING):")
    src.emit(3, "state = None  # something acted or was launched since the layer knew the state")
    src.emit(2, "else:")
    src.emit(3, "state = known[0]")
    states = [src.name(start, "STATE") for start in starts]  # where each schedule starts (it may end elsewhere)
    src.emit(2, f"if {' and '.join(f'state is not {s}' for s in states)}:")
    src.emit(3, "deferring = None  # not a state a schedule starts at: the general path runs the call")
    src.emit(2, "elif get_ident() != MAIN_THREAD:  # no SIGINT reaches another thread")
    src.emit(3, "deferring = False")
    src.emit(2, "elif type(getsignal(SIGINT)) is Wrapper:  # call_guard.INTERRUPTS.enter(), inlined")
    src.emit(3, "interrupts.depth += 1")
    src.emit(3, "deferring = True")
    src.emit(2, "else:  # a handler installed over flowlab's: the general path wraps it")
    src.emit(3, "deferring = None")
    src.emit(2, "if deferring is not None:")
    src.emit(3, "try:")
    for index, (schedule, state) in enumerate(zip(schedules, states)):
        depth = 4
        if len(schedules) > 1:
            src.emit(4, f"{'if' if index == 0 else 'elif' if index < len(schedules) - 1 else 'else'}"
                        f"{f' state is {state}' if index < len(schedules) - 1 else ''}:")
            depth = 5
        _emit_schedule(src, depth, site, layer, schedule, args)
    src.emit(4, "pending = layer.pending  # ReplayLayer.replay's bookkeeping, the same statements")
    src.emit(4, "if pending and pending[-1][0] is schedule:")
    src.emit(5, "pending[-1][1] += 1")
    src.emit(4, "else:")
    src.emit(5, "if len(pending) >= MAX_PENDING_RUNS:")
    src.emit(6, "layer.observe()")
    src.emit(5, "pending.append([schedule, 1])")
    src.emit(4, "rt.deferred = True")
    src.emit(4, "layer.known = (schedule.state, rt._seq, rt.launched)")
    src.emit(4, "layer.last = schedule")
    src.emit(4, "layer.replays += 1")
    src.emit(4, "schedule.replays += 1")
    src.emit(4, "runs += 1")
    src.emit(4, "if rt.sink is not None:  # someone listens: the call's act events, built from its schedule")
    src.emit(5, "layer.emit_events(schedule, 'callgen')")
    src.emit(3, "except BaseException:")
    src.emit(4, "fail(deferring)  # as the general path: forget the state, cancel the call, deliver a Ctrl-C")
    src.emit(4, "raise")
    src.emit(3, "if deferring:  # call_guard.INTERRUPTS.leave(), inlined")
    src.emit(4, "interrupts.depth -= 1")
    src.emit(4, "if interrupts.depth == 0 and interrupts.pending is not None:")
    src.emit(5, "watch_buffer.clear()  # the call finished, but the interrupt is raised instead of returning")
    src.emit(5, "interrupts.deliver()")
    src.emit(3, "watched = None")
    src.emit(3, "if watch_buffer:")
    src.emit(4, "watched = list(watch_buffer)")
    src.emit(4, "watch_buffer.clear()")
    src.emit(1, "if deferring is None:  # outside the lock: the general path takes it itself")
    src.emit(2, "return general(args, kwargs)")
    pulled = ", ".join(f"pulled{j}" for j in range(pulls))
    src.emit(1, f"result = pulled{site.result}" if site.result is not None else f"result = finish([{pulled}])")
    src.emit(1, "if watched:  # outside the lock: the handlers are the user's code")
    src.emit(2, "dispatch(watched, result)")
    src.emit(1, "return result")
    return GeneratedCall(site.job_name, "\n".join(src.lines) + "\n", src.names, schedules)


def _emit_arguments(src: _Source, site: CallSite, args: list[str]) -> None:
    """The general path's ``exact_inputs``, with each placeholder's shape, dtype and strides written in; a
    tp.ListNumpy argument is its list of one exact array per device, pushed joined as its push's kernel joins them
    (``check_inputs`` then ``system_kernels._pushed``). Anything else: the general path (its ``check_inputs``
    explains it)."""
    src.emit(1, f"if kwargs or len(args) != {len(args)}:")
    src.emit(2, "return general(args, kwargs)  # the general path checks, and explains, every other call")
    if args:
        src.emit(1, f"{', '.join(args)}{',' if len(args) == 1 else ''} = args")
    for arg, (shape, dtype, strides), n in zip(args, site.specs, site.pieces or (0,) * len(args)):
        dt, arrays = src.name(dtype, "DTYPE"), [f"{arg}_{i}" for i in range(n)] or [arg]
        if n:
            src.emit(1, f"if (type({arg}) is not list and type({arg}) is not tuple) or len({arg}) != {n}:")
            src.emit(2, f"return general(args, kwargs)  # a tp.ListNumpy argument: one array per device ({n})")
            src.emit(1, f"{', '.join(arrays)}{',' if n == 1 else ''} = {arg}")
        for array in arrays:
            src.emit(1, f"if (type({array}) is not ndarray or {array}.shape != {shape!r} "
                        f"or {array}.strides != {strides!r}")
            src.emit(3, f"or ({array}.dtype is not {dt} and {array}.dtype != {dt})):  # {dtype}")
            src.emit(2, "return general(args, kwargs)")
        if n:
            joined = arrays[0] if n == 1 else f"concatenate(({', '.join(arrays)}))"
            src.emit(1, f"{arg} = {joined}  # pushed as one blob, the devices' pieces side by side")


def _emit_schedule(src: _Source, depth: int, site: CallSite, layer: ReplayLayer, schedule: CapturedCall,
                   args: list[str]) -> None:
    """One schedule's call: the safety copy, the launch counter, its fused steps in order."""
    rt = layer.rt
    for line in textwrap.wrap(repr(schedule), 112 - 4 * depth, break_on_hyphens=False):
        src.emit(depth, f"# {line}")
    snapshot = site.guard.snapshot(schedule.guarded)
    for (live, copy), name in zip(snapshot.pairs, [n for n in snapshot.names if site.guard.live[n].size]):
        src.emit(depth, f"{src.name(copy, 'COPY')}[:] = {src.name(live, 'LIVE')}  # {name}: a failure could "
                        "leave it half-written")
    src.emit(depth, f"guard.taken = {src.name(snapshot, 'SNAPSHOT')}")
    src.emit(depth, f"rt.launched = known[2] + {len(schedule.key)}  # the call's launches (no instance is made)")
    pushes, routes = len(args), [rt._route(name)[1] for name in schedule.key]
    sources = {id(routes[i][0]): args[i] for i in range(pushes)}
    pulled = {id(routes[i][0]): (f"pulled{i - pushes - 1}", schedule.key[i]) for i in range(pushes + 1, len(routes))}
    for step in schedule.fused or ():
        if isinstance(step, Notifies):  # each finishes an instance of the call, and none is made
            src.emit(depth, f"# {step!r}: each would finish one of the call's instances; none is made")
            continue
        if isinstance(step, Segment):
            _emit_segment(src, depth, step, sources, pulled)
            continue
        actor = schedule.actor_of(step)
        assert actor is not None  # _check
        launch = id(_launch_of(rt, actor))
        if launch in sources:  # an unfused push: its kernel's copy, of the caller's array (the ndarray checked)
            out = step.args[1][0]  # type: ignore[attr-defined]  # partial(kernel, ins, outs)
            src.emit(depth, f"copyto({src.name(out, 'REGISTER')}, {sources[launch]}.reshape({out.shape!r}), "
                            f"casting='no')  # {actor.name}, not fused")
            continue
        if launch in pulled:  # an unfused pull: its kernel's copy, as the pulled array
            src.emit(depth, f"{pulled[launch][0]} = {src.name(step.args[0][0], 'REGISTER')}.copy()  "  # type: ignore
                            f"# {actor.name}, not fused")
            continue
        act, who = src.name(step, "STEP"), src.name(actor, "ACTOR")
        src.emit(depth, "try:")
        src.emit(depth + 1, f"{act}()  # {actor.name}, not fused")
        src.emit(depth, "except Exception as err:")
        src.emit(depth + 1, f"kernel_failed(err, {who})")
    for actor in schedule.kernels:  # a mirrored return is pulled as its devices' pieces, as the pull's kernel cuts it
        attrs = actor.task.exec_sequence[0].attrs
        if _op_type(actor) == "foreign_output" and attrs.get("mirrored_parts", 0) and site.result is None:
            name = pulled[id(_launch_of(rt, actor))][0]  # (one tp.Numpy result is the pulled array, its .logical)
            src.emit(depth, f"{name} = mirrored_list({name}, {attrs['mirrored_parts']}, {attrs['mirrored_axis']})")
    src.emit(depth, f"schedule = {src.name(schedule, 'SCHEDULE')}")


def _emit_segment(src: _Source, depth: int, segment: Segment, sources: dict[int, str],
                  pulled: dict[int, tuple[str, str]]) -> None:
    seg = src.name(segment, "SEGMENT")
    params = [src.name(arena, f"{seg.lower()}_b") for arena in segment.arenas]
    handoffs = []
    for external in segment.externals:
        launch = id(external.launch) if external.launch is not None else None
        if launch in sources:
            params.append(sources[launch])
        elif launch in pulled:
            name, job = pulled[launch]
            like = external.like
            src.emit(depth, f"{name} = empty({like.shape!r}, {src.name(like.dtype, 'DTYPE')})  # {job}'s copy")
            params.append(name)
        else:  # a watched copy: as the segment fetches and hands it on
            name = src.name(external, f"{seg.lower()}_e")
            src.emit(depth, f"{name}_array = {name}.fetch()")
            params.append(f"{name}_array")
            if external.done is not None:
                handoffs.append(f"{name}.done({name}_array)")
    fn = seg.lower()
    src.names[fn] = segment.fn
    src.emit(depth, f"# {len(segment.actors)} acts in one Numba call: {segment.source_path}")
    call = textwrap.wrap(f"failed = {fn}({', '.join(params)})", 116 - 4 * depth, break_long_words=False,
                         break_on_hyphens=False, subsequent_indent="        ")
    for line in call:
        src.emit(depth, line)
    src.emit(depth, "if failed >= 0:  # a checked act must fail: its Python kernel raises the op's error")
    src.emit(depth + 1, f"{seg}.raise_failure(failed)")
    for handoff in handoffs:
        src.emit(depth, handoff)


def _check(site: CallSite, layer: ReplayLayer, schedule: CapturedCall) -> None:
    """Raise NotGenerated unless the generated call would do exactly what the layer's replay does."""
    rt = layer.rt
    if rt.threads is not None or schedule.lanes is not None:
        raise NotGenerated("replayed in lanes, one per thread (lanes.py)")
    if len(schedule.key) < len(site.params) + 1 or schedule.key[len(site.params)] != site.job_name:
        raise NotGenerated(f"the launch list {schedule.key} is not {site.job_name}'s")
    if site.guard.snapshot(schedule.guarded).device_pairs:
        raise NotGenerated("the safety snapshot copies device memory")
    routes = [rt._route(name)[1] for name in schedule.key]
    launches = {id(queue) for queues in routes if len(queues) > 1 for queue in queues[:1]}
    notifiers = [id(queues[-1]) for queues in routes]
    finished: list[int] = []
    used: list[int] = []
    for step in schedule.fused or ():
        if isinstance(step, Notifies):
            finished += [id(queue) for queue in step.queues]
        elif isinstance(step, Segment):
            if step.fn is None:
                raise NotGenerated(f"{step!r} did not compile")
            used += [id(e.launch) for e in step.externals if e.launch is not None]
        else:
            actor = schedule.actor_of(step)
            if actor is None:
                raise NotGenerated(f"the step {step!r} is no kernel's act")
            if _launch_of(rt, actor) is not None:  # an unfused push or pull: written out as its copy
                if _op_type(actor) not in ("foreign_input", "foreign_output"):
                    raise NotGenerated(f"the step {step!r} takes a launched instance")
                used.append(id(_launch_of(rt, actor)))
    if sorted(finished) != sorted(notifiers) or sorted(used) != sorted(launches):
        raise NotGenerated("the schedule does not take each of the call's launches exactly once")


def _op_type(actor: Actor) -> str:
    return actor.task.exec_sequence[0].op_type


def _launch_of(rt: Any, actor: Actor) -> Any:
    """The launch buffer an act takes its job instance from (a ForeignInput's or ForeignOutput's), or None."""
    name = actor.task.exec_sequence[0].attrs.get("ofblob_buffer_name")
    return rt.buffers.get(name) if name is not None else None


def _mirrored_list() -> Callable[[np.ndarray, int, int | None], Any]:
    from ..runtime.system_kernels import mirrored_list

    return mirrored_list


def _watch_buffer_name() -> str:
    from ..runtime.system_kernels import WATCH_BUFFER

    return WATCH_BUFFER


def _kernel_failed(plan: Any) -> Callable[[Exception, Actor], None]:
    def kernel_failed(err: Exception, actor: Actor) -> None:
        """A step that is not fused raised: as the layer's replay reports it, naming the act's op."""
        if isinstance(err, KernelError):
            raise err
        raise kernel_error(plan, actor, err) from err

    return kernel_failed


def _fail(layer: ReplayLayer, cancel: Callable[[], None]) -> Callable[[bool], None]:
    def fail(deferring: bool) -> None:
        """The general path's failure handling (ReplayLayer.replay, Session._run_jobs), in the except block."""
        layer.known = None
        cancel_then_deliver(cancel, deferring)

    return fail
