"""Fusing a replayed schedule: runs of kernel acts become one generated Numba function.

A replayed schedule (layer.py) calls the same kernels on the same register arrays every time, so the kernels
that can say what they do as one Numba call (``FusedCall``, their ``Kernel.fused``: ``kernels.registry.fusable``) are
fused: each run of consecutive fusable acts becomes a generated module whose function takes the memory blocks'
arenas, rebuilds every register view inside (a slice of an arena, viewed as the blob's dtype and shape) and calls
the kernels in act order. One dispatch replaces a Python call per act. Arrays outside the memory blocks are
the function's further arguments (``External``): the caller's pushed arrays, and fresh arrays for pulled and
watched copies, handed on once the segment ran. So a push/train/pull call is one segment. What cannot be fused
(a kernel with no Numba form, such as model I/O or a Python-only schedule) stays a Python step between segments,
in order. Section notifies touch no register, so a run goes on past them and they follow its segment. A kernel's
own arrays (a conv's column buffer, its geometry) are ``Owned`` arguments, passed to the function as they are.
Consecutive calls that a chain runs together (``kernels.registry.chain_at``: a conv with its bias_add, relu and
pool, sample by sample, kernels/numba_cpu/chains.py) are one call of the generated function. A run of more than
MAX_SEGMENT_CALLS calls is several segments, one after the other: LLVM's compile of one function grows faster than
its size (Numba links every callee's code into it and optimizes the whole), so a 2-device ResNet-50's one serial
segment of 1,810 kernels compiled for over 20 minutes.

The source is written to the Numba cache directory under a name derived from its text, so it is compiled once
per machine and cached (Numba cannot cache a function made by ``exec``); the text holds no address and no
offset (the views' offsets in their arenas are an argument, ``o``), so another process running the same Plan
writes the same text and loads the compiled segment from the cache, and the schedules of one launch list that
differ only in which rotating register each call uses share their segments' compiles. A segment compiles on a
background thread (one for the process) while the replay goes on act by act: the 9th call no longer pauses 6-18 s
for it. Until its function is ready a segment runs its acts one by one, which the
replay proof shows bit-identical to the fused function (FLOWLAB_FUSE_BACKGROUND=0 compiles in the call instead).

A kernel that must fail (a checked call, such as a label out of range) makes the segment return its index; its
Python kernel then runs to raise the error the protocol would have raised, as a KernelError naming the op."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import KernelError, kernel_error
from ..flags import get
from ..kernels.registry import External, FusedCall, Owned

if TYPE_CHECKING:
    from ..runtime.actor import Actor
    from ..runtime.runtime import Runtime
    from .capture import CapturedCall

FUSE_AFTER = 8  # replays of a schedule before its segments are compiled (a one-off call is not worth it)
# the most calls one generated segment makes: a longer run is cut into several segments (combine.split_run), since
# a function's compile grows faster than its size (docs/performance.md, "Compiling a big Plan's segments")
MAX_SEGMENT_CALLS = 300


def fusion_enabled() -> bool:
    return get("fuse")


_compiler: ThreadPoolExecutor | None = None  # one thread: segments compile one after another, off the caller's
_compiler_lock = threading.Lock()
_pending: set[Future[None]] = set()


def _submit(job: Callable[[], None]) -> Future[None]:
    global _compiler
    with _compiler_lock:
        if _compiler is None:  # its thread is joined at exit: a compile is never cut off half-written to the cache
            _compiler = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowlab-fuse")
            # ... but at exit the compiles not yet begun are dropped (this runs before the executor's own join)
            register = getattr(threading, "_register_atexit", None)
            if register is not None:
                register(lambda executor=_compiler: executor.shutdown(wait=False, cancel_futures=True))
        future = _compiler.submit(job)
        _pending.add(future)
    future.add_done_callback(_pending.discard)
    return future


def wait_compiled(timeout: float | None = None) -> None:
    """Wait until every segment compile submitted so far has finished (tests and benchmarks)."""
    for future in list(_pending):
        future.exception(timeout)


class Unfusable(Exception):
    """A register view that cannot be rebuilt from an arena inside the generated function."""


class Segment:
    """One generated function over a run of fusable acts, and how to call it. ``fn`` is None until the function
    is compiled (``compile``, on the caller's thread or the background one): until then a call runs the acts one
    by one, as the unfused replay does. ``error`` says why a compile failed; such a segment stays act by act."""

    def __init__(self, arenas: tuple[np.ndarray, ...], steps: list[Callable[[], None]], actors: list[Actor],
                 plan: Any, source_path: Path, externals: tuple[External, ...] = ()) -> None:
        self.fn: Any = None
        self.arenas, self.steps, self.actors, self.plan = arenas, steps, actors, plan
        self.source_path = source_path
        self.externals = externals  # the function's arguments after the arenas, in order
        self.like = tuple(e.like for e in externals)
        self.fetches = tuple(e.fetch for e in externals)
        self.handoffs = tuple((k, e.done) for k, e in enumerate(externals) if e.done is not None)
        self.external_acts: tuple[int, ...] = ()  # the acts taking an external, and the checked ones (``_segment``)
        self.checked_acts: tuple[int, ...] = ()
        self.calls = 0  # the calls the function makes (a chain or a pair is one): at most MAX_SEGMENT_CALLS
        self.error: BaseException | None = None
        self.warned = False
        self.cache_hit: bool | None = None  # whether Numba loaded the function from its cache
        self.future: Future[None] | None = None

    @property
    def raises_at(self) -> tuple[int, ...]:
        """The acts at which a call can raise, as it runs now (the call guard: lanes.py, layer.py): compiled, at the
        first when it fetches or allocates (every external, before any act: ``__call__``); act by act (compiling,
        or its compile failed), at each act taking an external (its Python kernel fetches or allocates it there);
        either way at each checked call."""
        fetched = self.external_acts if self.fn is None else self.external_acts and (0,)
        return tuple(sorted({*fetched, *self.checked_acts}))

    def compile(self) -> None:
        from numba import typeof

        fn = _import(self.source_path)
        fn.compile(tuple(typeof(a) for a in (*self.arenas, *self.like)))  # now: a call runs kernels
        self.cache_hit = sum(fn.stats.cache_hits.values()) > 0
        self.fn = fn

    def compile_in_background(self) -> None:
        segment = weakref.ref(self)  # a queued compile must not keep a cleared session's runtime alive (issue 25)
        def job() -> None:
            if (alive := segment()) is not None:  # else its runtime is gone: nothing will call it
                try:
                    alive.compile()
                except BaseException as err:  # the segment stays act by act; the next call warns
                    alive.error = err

        self.future = _submit(job)

    def __call__(self) -> None:
        if self.fn is None:
            self.act_by_act()
            return
        extra = []  # in act order: buffers are popped as the acts would (a loop, not a comprehension: no frame)
        for fetch in self.fetches:
            extra.append(fetch())
        failed = self.fn(*self.arenas, *extra)
        if failed >= 0:
            self.raise_failure(failed)
        for k, done in self.handoffs:
            done(extra[k])

    def raise_failure(self, failed: int) -> None:
        """The function returned ``failed``, the index of a checked act that must fail: its Python kernel raises
        the act's own error, as a KernelError naming its op."""
        actor = self.actors[failed]
        try:
            self.steps[failed]()
        except Exception as err:
            raise kernel_error(self.plan, actor, err) from err
        raise KernelError(f"the fused kernel of {actor.name!r} failed, but its Python kernel did not")

    def act_by_act(self) -> None:
        if self.error is not None and not self.warned:
            err, self.warned = self.error, True
            warnings.warn(f"flowlab could not compile {self!r}; its acts keep running one by one "
                          f"({type(err).__name__}: {err})", RuntimeWarning, stacklevel=4)
        for index, step in enumerate(self.steps):
            try:
                step()
            except KernelError:
                raise
            except Exception as err:  # as the unfused replay reports it: naming the act's op
                raise kernel_error(self.plan, self.actors[index], err) from err

    def __repr__(self) -> str:
        state = "compiled" if self.fn is not None else "compiling, act by act" if self.error is None else "act by act"
        return f"<fused segment of {len(self.actors)} acts in {self.calls} calls ({state}): {self.source_path.name}>"


def _arena_table(rt: Runtime) -> list[tuple[int, int, int, np.ndarray]]:
    table = []
    for block_id, arena in rt.arenas.items():
        start = arena.ctypes.data
        table.append((start, start + arena.nbytes, block_id, arena))
    return table


def _literal(value: int | float) -> str:
    """A number as Python source (inf and nan have no literal)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "np.nan" if math.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
    return repr(value)


class _Codegen:
    def __init__(self, arenas: list[tuple[int, int, int, np.ndarray]]) -> None:
        self.arenas = arenas
        self.used: dict[tuple[int, str], int] = {}  # (block id, dtype) -> argument position
        self.arena_args: list[np.ndarray] = []
        self.imports: dict[tuple[str, str], str] = {}
        self.views: dict[tuple[int, str, tuple[int, ...], tuple[int, ...]], str] = {}
        self.owned: dict[int, str] = {}  # id of an Owned array -> its parameter
        self.lines: list[str] = []
        self.offsets: list[int] = []  # each view's first element in its arena: the function's last arena argument
        self.externals: list[External] = []

    def fn_name(self, fn: Any) -> str:
        py = getattr(fn, "py_func", None)
        if py is None or "<locals>" in py.__qualname__ or "." in py.__qualname__:
            raise Unfusable(f"{fn!r} is not a module-level Numba function")
        key = (py.__module__, py.__qualname__)
        if key not in self.imports:
            self.imports[key] = f"k{len(self.imports)}"
        return self.imports[key]

    def array(self, a: np.ndarray) -> str:
        ptr = a.ctypes.data
        found = [(start, block_id, arena) for start, end, block_id, arena in self.arenas
                 if start <= ptr and ptr + a.nbytes <= end]
        if not found:
            raise Unfusable("an argument is not in any memory block")
        start, block_id, arena = found[0]
        offset = ptr - start
        if offset % a.itemsize:
            raise Unfusable(f"a {a.dtype} view at byte {offset} of its arena")
        if a.flags.c_contiguous:
            shape, transposed = a.shape, False
        elif a.ndim == 2 and a.T.flags.c_contiguous:
            shape, transposed = a.T.shape, True
        else:
            raise Unfusable(f"a strided view {a.shape}/{a.strides}")
        key = (ptr, a.dtype.str, a.shape, a.strides)
        if key in self.views:
            return self.views[key]
        # The arena comes in already viewed as the blob's dtype: an ndarray.view inside the function made Numba
        # compile a dtype-view helper and lower a view per register, a third of a segment's compile time.
        typed = (block_id, a.dtype.str)
        if typed not in self.used:
            self.used[typed] = len(self.arena_args)
            self.arena_args.append(arena[:arena.nbytes - arena.nbytes % a.itemsize].view(a.dtype))
        name = f"v{len(self.views)}"
        # the offset is an argument (``o``), not a literal: the same kernels on the same shapes are the same text,
        # so the schedules of a launch list's register rotations (their offsets differ) share one compile
        k = len(self.offsets)
        self.offsets.append(offset // a.itemsize)
        expr = f"view(b{self.used[typed]}, o[{k}], {tuple(int(d) for d in shape)!r})"  # views.py
        self.lines.append(f"    {name} = {expr}{'.T' if transposed else ''}")
        self.views[key] = name
        return name

    def owned_array(self, owned: Owned) -> str:
        """A kernel's own array (scratch, geometry): a parameter of its own, passed as it is."""
        key = id(owned.array)
        if key not in self.owned:
            if not owned.array.flags.c_contiguous:
                raise Unfusable(f"a strided {owned!r}")
            self.owned[key] = f"b{len(self.arena_args)}"
            self.arena_args.append(owned.array)
        return self.owned[key]

    def external(self, external: External) -> str:
        if not external.like.flags.c_contiguous:
            raise Unfusable(f"a strided external {external!r}")
        self.externals.append(external)
        return f"e{len(self.externals) - 1}"

    def constant(self, value: Any) -> str:
        if isinstance(value, (bool, np.bool_)):
            return repr(bool(value))
        if isinstance(value, np.generic):
            return f"np.{value.dtype.name}({_literal(value.item())})"
        if isinstance(value, int):  # typed int64 as a Python int is: a bare literal would make Numba compile the
            return f"np.int64({value})"  # callee again for each constant's value (Literal[int](value) types)
        if isinstance(value, float):
            return _literal(value)
        if isinstance(value, tuple) and value and all(type(v) is float for v in value):  # a UniTuple(float64)
            return f"({', '.join(_literal(v) for v in value)},)"
        raise Unfusable(f"constant {value!r}")

    def call(self, index: int, call: FusedCall) -> None:
        name = self.fn_name(call.fn)
        args = ", ".join(self.array(a) if isinstance(a, np.ndarray) else self.external(a) if isinstance(a, External)
                         else self.owned_array(a) if isinstance(a, Owned) else self.constant(a) for a in call.args)
        if call.checked:
            self.lines.append(f"    if {name}({args}) >= 0:")
            self.lines.append(f"        return {index}")
        else:
            self.lines.append(f"    {name}({args})")

    def source(self) -> str:
        head = ["# Generated by flowlab (replay/fused.py): one fused segment of a replayed schedule.",
                "import numpy as np", "", "from flowlab.kernels.numba_cpu._numba import njit",
                "from flowlab.replay.views import view"]
        head += [f"from {module} import {qualname} as {alias}" for (module, qualname), alias in self.imports.items()]
        params = ", ".join([f"b{i}" for i in range(len(self.arena_args))] + ["o"] +
                           [f"e{i}" for i in range(len(self.externals))])
        return "\n".join([*head, "", "", "@njit", f"def segment({params}):", *self.lines, "    return -1", ""])


def fused_call_of(actor: Actor, step: Callable[[], None]) -> FusedCall | None:
    kernel = actor.kernel
    build = kernel.fused if kernel is not None else None
    if build is None:
        return None
    ins, outs = step.args  # type: ignore[attr-defined]  # partial(kernel, ins, outs)
    return build(ins, outs)


def segment_call_of(actor: Actor | None, step: Callable[[], None], table: Any) -> FusedCall | None:
    """``actor``'s step as a call a generated segment can make: None for a notify, a kernel with no fused form, or
    one with an argument no arena of ``table`` can express."""
    call = fused_call_of(actor, step) if actor is not None else None
    if call is not None:
        try:
            _Codegen(table).call(0, call)  # every argument expressible from an arena?
        except Unfusable:
            return None
    return call


def direct_call(step: Callable[[], None], call: FusedCall) -> Callable[[], None]:
    """A lone fusable step, one that runs between two hand-offs of a lane (replay/lanes.py: a gradient's
    reduce-scatter waits on the other lane, which waits on it): its Numba call itself, with no Python kernel
    around it and the GIL released throughout, where the call cannot fail (unchecked) and takes no external
    array; else the step. The fused call computes what the kernel does, bit for bit (as in a segment)."""
    if call.checked or any(isinstance(a, External) for a in call.args):
        return step
    return partial(call.fn, *(a.array if isinstance(a, Owned) else a for a in call.args))


def _write(source: str) -> Path:
    """The segment's source file, named by its content (the same Plan writes the same text in every process)."""
    from ..kernels.numba_cpu._numba import cache_dir

    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    folder = cache_dir() / "fused"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"segment_{digest}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(source)
        tmp.replace(path)  # atomic: a concurrent process reads the old or the new file, never half of one
    return path


_import_lock = threading.Lock()


def _import(path: Path) -> Any:
    name = f"flowlab_fused_{path.stem.removeprefix('segment_')}"
    with _import_lock:
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # Numba's cache finds a compiled function's module by name when loading it
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        return sys.modules[name].segment


def _segments(rt: Runtime, arena_table: list[tuple[int, int, int, np.ndarray]],
              run: list[tuple[Callable[[], None], Actor, FusedCall]]) -> list[Segment]:
    """The run's segments, in order: one per piece of at most MAX_SEGMENT_CALLS calls (combine.split_run)."""
    from .combine import split_run

    return [_segment(rt, arena_table, piece, calls) for piece, calls in split_run(run, MAX_SEGMENT_CALLS)]


def _segment(rt: Runtime, arena_table: list[tuple[int, int, int, np.ndarray]],
             run: list[tuple[Callable[[], None], Actor, FusedCall]], calls: list[tuple[int, FusedCall]]) -> Segment:
    gen = _Codegen(arena_table)
    for index, call in calls:
        gen.call(index, call)
    arenas = (*gen.arena_args, np.array(gen.offsets, np.int64))  # ``o``, the views' offsets, last
    segment = Segment(arenas, [s for s, _, _ in run], [a for _, a, _ in run], rt.plan, _write(gen.source()),
                      tuple(gen.externals))
    segment.calls = len(calls)
    segment.external_acts = tuple(k for k, (_, _, call) in enumerate(run)
                                  if any(isinstance(a, External) for a in call.args))
    segment.checked_acts = tuple(k for k, (_, _, call) in enumerate(run) if call.checked)
    if get("fuse_background"):
        segment.compile_in_background()
    else:
        segment.compile()
    return segment


def fuse(rt: Runtime, schedule: CapturedCall) -> list[Callable[[], None]] | None:
    """The schedule's steps with each run of two or more fusable kernel acts replaced by one Segment; None when
    nothing fuses. Any failure to generate or compile leaves the schedule as it was (with a warning)."""
    steps: list[Callable[[], None]] = []
    run: list[tuple[Callable[[], None], Actor, FusedCall]] = []
    segments = 0

    notifies: list[Callable[[], None]] = []  # section notifies met inside a run: they touch no register
    arena_table = _arena_table(rt)

    def flush() -> None:
        nonlocal segments
        if len(run) >= 2:
            made = _segments(rt, arena_table, run)
            steps.extend(made)
            segments += len(made)
        else:
            steps.extend(step for step, _, _ in run)
        steps.extend(notifies)  # after the run's kernels, in their order: nothing observes the difference
        run.clear()
        notifies.clear()

    try:
        for step, actor in zip(schedule.steps, schedule.step_actors):
            if actor is None and run:  # a notify only finishes a job instance: let the run go on past it
                notifies.append(step)
                continue
            call = segment_call_of(actor, step, arena_table)
            if call is None or actor is None:  # a notify (no actor) has no segment call
                flush()
                steps.append(step)
            else:
                run.append((step, actor, call))
        flush()
    except Exception as err:  # fusion is an optimization: never fail the call because of it
        warnings.warn(f"flowlab could not fuse {schedule!r}; it keeps replaying act by act "
                      f"({type(err).__name__}: {err})", RuntimeWarning, stacklevel=2)
        return None
    return steps if segments else None
