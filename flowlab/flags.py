"""Every switch of flowlab, declared once: ``flow.flags``.

A switch has a name (``kernels``), an environment variable (``FLOWLAB_KERNELS``), a type, a default and a doc that
says what it changes and when it is read. Its value comes from, in order of precedence:

1. a scope, ``with flow.flags(kernels="reference", replay=False): ...`` (restored on exit, exception or not);
2. ``flow.flags.set(...)`` or ``%flowlab kernels numba`` (for the rest of the process);
3. the environment variable, read at the moment the switch is read (so ``FLOWLAB_X=... python prog.py`` and a
   test's ``monkeypatch.setenv`` work as they always did);
4. the default.

Scopes and ``set`` are process-wide, not per thread: the runtime's lanes, its OS threads and background compiles
read the value the program set. Each switch is read at the moment its doc names (a session's start, a call, a
kernel's build); a scope covers what is read while it is open, and a value read before the scope is kept.

This module is the only one in flowlab that reads ``FLOWLAB_*`` variables (tests/project/test_flags.py scans the
source);
docs/flags.md's table is generated from the declarations below (``markdown()``).
"""

from __future__ import annotations

import difflib
import os
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

TRUE = ("1", "true", "on", "yes")
FALSE = ("0", "false", "off", "no")


class FlagError(ValueError):
    """A flag's value (from the environment, a scope or ``%flowlab``) is not one it accepts, or its name is unknown."""


@dataclass(frozen=True)
class Flag:
    name: str
    kind: str  # "bool", "auto-bool" (True/False/None), "choice", "seconds", "path"
    default: Any
    doc: str  # what it changes
    read: str  # when it is read
    choices: tuple[str, ...] = ()
    compares: bool = False  # kept so that tests or benchmarks can compare two paths

    @property
    def env(self) -> str:
        return "FLOWLAB_" + self.name.upper()

    def accepted(self) -> str:
        """The accepted forms, for an error message and the doc table."""
        if self.kind == "choice":
            return ", ".join(self.choices[:-1]) + " or " + self.choices[-1]
        return {"bool": "1/true/on/yes or 0/false/off/no",
                "auto-bool": "1/true/on/yes, 0/false/off/no or auto",
                "seconds": "a positive number of seconds",
                "path": "a path"}[self.kind]

    def parse(self, raw: Any, origin: str) -> Any:
        """``raw`` (a string from the environment, or a Python value from a scope) as this flag's value; ``origin``
        says where it came from, for the error: ``env`` or the call that gave it (``flow.flags``)."""
        if raw is None or (isinstance(raw, str) and raw.strip() == ""):
            return self.default  # an empty variable means unset, as every reader before this table treated it
        text = str(raw).strip()
        low = text.lower()
        if self.kind in ("bool", "auto-bool"):
            if isinstance(raw, bool):
                return raw
            if self.kind == "auto-bool" and low == "auto":
                return None
            if low in TRUE:
                return True
            if low in FALSE:
                return False
        elif self.kind == "choice":
            if text in self.choices:
                return text
        elif self.kind == "seconds":
            try:
                value = float(text)
            except ValueError:
                value = float("nan")
            if value > 0:
                return value
        elif self.kind == "path":
            return text
        given = f"{self.env}={raw!r}" if origin == "env" else f"{origin}({self.name}={raw!r})"
        raise FlagError(f"{given}: expected {self.accepted()} (flag {self.name!r}, docs/flags.md)")


def _flags(*declared: Flag) -> dict[str, Flag]:
    return {f.name: f for f in declared}


FLAGS: dict[str, Flag] = _flags(
    Flag("kernels", "choice", "tiered",
         "Which kernels run on the CPU: `tiered` runs a session's first call on the NumPy reference kernels and "
         "every later call on Numba's (docs/kernels.md); `numba` Numba's only (bit-reproducible, what benchmarks "
         "use); `reference` the NumPy ones only.",
         "when a runtime binds its kernels (a session's start, a debugger's)",
         choices=("tiered", "reference", "numba")),
    Flag("replay", "bool", True,
         "Capture each call's act sequence and replay it on later calls instead of stepping the protocol. Off: "
         "every call steps the protocol (the reference semantics).",
         "when a session starts its runtime (its ExecutionPolicy, docs/run-path.md)", compares=True),
    Flag("fuse", "bool", True,
         "Compile a replayed schedule's acts into fused segments after a few replays (replay/fused.py).",
         "when a session starts its runtime (its ExecutionPolicy, docs/run-path.md)", compares=True),
    Flag("fuse_background", "bool", True,
         "Compile fused segments on a background thread while calls go on replaying; off: compile in the call.",
         "when a schedule's segments are compiled", compares=True),
    Flag("callgen", "bool", True,
         "Run a fused schedule through a generated Python call (replay/callgen.py) instead of the replay loop.",
         "when a session starts its runtime (its ExecutionPolicy, docs/run-path.md)", compares=True),
    Flag("threads", "auto-bool", None,
         "Run each Plan thread on its own OS thread (on), all on one scheduler thread (off), or choose from the "
         "Plan (auto: threads when two or more threads compute with two cores available, lanes only if they beat one "
         "thread in a trial of the first fused replays).",
         "when a runtime starts", compares=True),
    Flag("winograd", "auto-bool", None,
         "Winograd convolutions for 3x3 and 5x5 filters on the CPU: auto, the algorithm (im2col or Winograd's, and "
         "its tile and chunk) measured fastest per conv shape on this machine, cached; on: Winograd F(4x4, r x r) "
         "by the fixed rule; off: every conv on im2col.",
         "when a conv kernel is built", compares=True),
    Flag("blas", "choice", "auto",
         "Which BLAS Numba's GEMMs call: `auto` numpy's own cblas when found, else scipy's; `scipy` forces "
         "scipy's.", "the first time a Numba GEMM is compiled", choices=("auto", "scipy"), compares=True),
    Flag("debug", "bool", False,
         "Keep flowlab's own frames in the tracebacks of user-facing errors (for work on flowlab itself).",
         "when an error is raised"),
    Flag("debug_mode", "bool", False,
         "As `flow.config.enable_debug_mode(True)`: dump each session's Job, Plan and boxing logs under log/.",
         "when a session compiles"),
    Flag("cache_dir", "path", None,
         "Where Numba's and the fused segments' compiled code is cached (default: $XDG_CACHE_HOME/flowlab or "
         "~/.cache/flowlab).", "when Numba is first imported, and when a fused segment is compiled"),
    Flag("dot", "path", None,
         "A dot-compatible program to render graphs with, tried before `dot` on PATH and graphviz-pure.",
         "when a graph is rendered"),
    Flag("download_timeout", "seconds", 20.0,
         "How long `flow.data.load_mnist` waits for the download of mnist.npz.", "when a download starts"),
    Flag("ray_connect_timeout", "seconds", 15.0,
         "How long connecting to a Ray cluster may take before it is an error.", "when a session connects"),
    Flag("machine_timeout", "seconds", 60.0,
         "How long a Ray machine may make no progress (or not answer) before it is an error naming it.",
         "when a multi-machine runtime starts"),
)

_lock = threading.Lock()
_set: dict[str, Any] = {}  # flags.set / %flowlab
_scoped: dict[str, list[Any]] = {}  # a stack per flag: the innermost open scope's value last


def _flag(name: str) -> Flag:
    flag = FLAGS.get(name)
    if flag is None:
        close = difflib.get_close_matches(name, list(FLAGS), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; the flags are {', '.join(FLAGS)}"
        raise FlagError(f"unknown flag {name!r}{hint}")
    return flag


def get(name: str) -> Any:
    """The value of flag ``name`` now: the innermost scope's, else the one set, else its variable's, else default."""
    flag = _flag(name)
    with _lock:
        stack = _scoped.get(name)
        if stack:
            return stack[-1]
        if name in _set:
            return _set[name]
    return flag.parse(os.environ.get(flag.env), "env")


def source(name: str) -> str:
    """Where ``get(name)`` takes its value from: ``scoped``, ``set``, ``env`` or ``default``."""
    flag = _flag(name)
    with _lock:
        if _scoped.get(name):
            return "scoped"
        if name in _set:
            return "set"
    return "env" if os.environ.get(flag.env, "").strip() else "default"


def _parsed(values: dict[str, Any], origin: str) -> dict[str, Any]:
    return {name: _flag(name).parse(value, origin) for name, value in values.items()}


def set(**values: Any) -> None:
    """Set flags for the rest of the process (above the environment, below a scope); ``None`` unsets one."""
    for name in values:
        _flag(name)  # every name and value is checked before any is applied
    parsed = _parsed({k: v for k, v in values.items() if v is not None}, "flow.flags.set")
    with _lock:
        for name in values:
            _set.pop(name, None)
        _set.update(parsed)


@contextmanager
def scoped(**values: Any) -> Iterator[None]:
    """``with flow.flags(kernels="reference"): ...``: the flags take these values inside, their old ones after."""
    parsed = _parsed(values, "flow.flags")  # every value is checked before any is applied
    with _lock:
        for name, value in parsed.items():
            _scoped.setdefault(name, []).append(value)
    try:
        yield
    finally:
        with _lock:
            for name in parsed:
                _scoped[name].pop()


def _shown(flag: Flag, value: Any) -> str:
    if value is None:
        return "auto" if flag.kind == "auto-bool" else "(none)"
    return str(value)


def shown(name: str) -> str:
    """Flag ``name``'s current value as ``show()`` prints it (``auto``, ``(none)``, ``True``, ``numba``)."""
    return _shown(_flag(name), get(name))


def show() -> None:
    """Print the table of flags with each one's current value and where it came from (``table()``'s text)."""
    print(table())


def table() -> str:
    """Each flag's current value and where it came from (default / env / set / scoped), one line each."""
    rows = [(f.name, _shown(f, get(f.name)), source(f.name), f.env) for f in FLAGS.values()]
    widths = [max(len(r[i]) for r in [("flag", "value", "from", "variable"), *rows]) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
             for r in [("flag", "value", "from", "variable"), *rows]]
    return "\n".join(lines)


def markdown() -> str:
    """docs/flags.md's table, generated from the declarations (tests/project/test_flags.py checks the file holds it):
    ``python -c "import flowlab.flags as f; print(f.markdown(), end='')"``."""
    rows = ["| flag | variable | accepts | default | what it changes | read | kept to compare paths |",
            "|---|---|---|---|---|---|---|"]
    for f in FLAGS.values():
        rows.append(f"| `{f.name}` | `{f.env}` | {f.accepted()} | `{_shown(f, f.default)}` | {f.doc} | {f.read} | "
                    f"{'yes' if f.compares else ''} |")
    return "\n".join(rows) + "\n"


class _FlagsModule(types.ModuleType):
    """This module's class: ``flow.flags`` is the module itself, and calling it scopes flags."""

    def __call__(self, **values: Any) -> AbstractContextManager[None]:
        """``with flow.flags(kernels="reference", replay=False): ...``"""
        return scoped(**values)

    def __repr__(self) -> str:
        return f"<flow.flags: {', '.join(f'{f.name}={_shown(f, get(f.name))}' for f in FLAGS.values())}>"


def __getattr__(name: str) -> Any:
    """``flow.flags.kernels``: a flag's current value (PEP 562: only names the module does not define)."""
    if name in FLAGS:
        return get(name)
    raise AttributeError(f"flow.flags has no flag or function {name!r}")


sys.modules[__name__].__class__ = _FlagsModule
