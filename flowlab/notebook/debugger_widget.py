"""The step debugger widget (anywidget): the ``payload`` (the Plan) and ``state`` traits and the command messages of
payload.md. Every command is a Python method too (``step``, ``break_``, ``inspect``, ...), so tests and scripts
drive it without a browser; the ES module only draws ``state`` and sends commands.

A command that fails sets ``state["error"]`` and changes nothing else (the inspected blob stays the last good
one); the next command that succeeds clears it. ``state`` stays bounded: the actors table up to ``MAX_ACTORS``
rows (the next actor always among them), a blob's first 64 values, the most recent ``MAX_LIFETIMES`` register
lifetimes.

``state`` is the whole state, in the kernel only; the comm carries ``update``, the change since the last update
(debugger_update.py: a step of the 30-layer MLP job sends a few KiB, not the ~200 KiB of its state). The front end
asks for the whole state (``{"type": "resync"}``) when it has none or missed an update.
"""

from __future__ import annotations

import pathlib
from typing import Any

import anywidget
import numpy as np
import traitlets

from ..debug import Debugger, Stop
from ..debug.export import trace_events
from ..viz.payload import plan_payload
from ..viz.payload_pack import live
from .debugger_tables import StateTables
from .debugger_update import StateStream

STATIC = pathlib.Path(__file__).parent / "static"
# the front end built from extension/ (one module for every view; it inserts its own CSS)
_ESM = STATIC / "flowlab_widget.js"
MAX_ACTORS = 1000
MAX_LIFETIMES = 2000
COMMANDS = ("step", "step_n", "continue", "run_to", "restart", "run_to_end_of_job", "break", "unbreak", "inspect",
            "inject", "export_trace", "back", "rewind", "go_to_writer")


class DebuggerWidget(anywidget.AnyWidget):
    """The step debugger on a ``flow.debug(...)`` Debugger: the Plan with the next actor, the actors table,
    breakpoints, the blob inspector, the stop reason and the memory record."""

    _esm = _ESM
    payload = traitlets.Dict()  # the Plan's payload (version 1), in the kernel only
    packed = traitlets.Dict().tag(sync=True)  # what the comm carries: ``payload`` as payload_pack.live makes it
    state = traitlets.Dict()  # the whole state, in the kernel only (tests and scripts read it)
    update = traitlets.Dict().tag(sync=True)  # what the comm carries: the change of ``state`` (debugger_update.py)

    def __init__(self, dbg: Debugger, **kwargs: Any) -> None:
        self.dbg = dbg
        self._inspected: str | None = None
        self._stop: Stop | None = None
        self._status = "ready"
        self._stream = StateStream()
        self._tables = StateTables()  # the actors table and memory record, kept between publishes
        super().__init__(payload=plan_payload(dbg.plan, dbg.session.job_set), **kwargs)
        self.on_msg(self._on_msg)
        self._publish(None)

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        """A trait change sends ``update`` as it is (a delta); the whole widget state (key None: the comm_open, a
        page's request_state, the widget state a notebook saves) carries the whole debugger state, so a reloaded
        page or a saved notebook draws it without asking."""
        state = super().get_state(key, drop_defaults)
        if key is None and "update" in state:
            state["update"] = self._stream.whole(self.state)
        return state

    @traitlets.observe("payload")
    def _on_payload(self, change: dict[str, Any]) -> None:
        self.packed = live(change["new"])

    # -- messages ----------------------------------------------------------------------------------
    def _on_msg(self, widget: Any, content: dict[str, Any], buffers: Any) -> None:
        if content.get("type") == "command":
            self.command(str(content.get("cmd", "")), dict(content.get("args") or {}))
        elif content.get("type") == "resync":
            self.resync()

    def resync(self) -> None:
        """Send the whole state again (a view that has none, or missed an update, asks for it)."""
        self.update = self._stream.update(self.state, full=True)

    def command(self, cmd: str, args: dict[str, Any] | None = None) -> None:
        """Run one front-end command; its error (if any) goes to ``state["error"]``, shown once."""
        args = args or {}
        try:
            if cmd not in COMMANDS:
                raise ValueError(f"unknown command {cmd!r}; commands are {', '.join(COMMANDS)}")
            if cmd == "step":
                self.step()
            elif cmd == "step_n":
                self.step_n(int(args.get("n", 10)))
            elif cmd == "continue":
                self.continue_()
            elif cmd == "run_to":
                self.run_to(str(args.get("target", "")))
            elif cmd == "restart":
                self.restart()
            elif cmd == "run_to_end_of_job":
                self.run_to_end_of_job()
            elif cmd == "break":
                self.break_(str(args.get("kind", "")), args.get("target"))
            elif cmd == "unbreak":
                self.unbreak(int(args["id"]))
            elif cmd == "inspect":
                self.inspect(args.get("name") or args.get("regst") or args.get("node") or "")
            elif cmd == "inject":
                self.inject(str(args.get("name", "")), args.get("value", 0.0))
            elif cmd == "export_trace":
                self.send_trace()
            elif cmd == "back":
                self.back(int(args.get("n", 1)))
            elif cmd == "rewind":
                self.rewind(int(args.get("to", 0)))
            elif cmd == "go_to_writer":
                self.go_to_writer(str(args.get("name") or self._inspected or ""))
        except Exception as err:  # shown in the widget: a bad command must not kill the view
            self._publish(f"{type(err).__name__}: {_message(err)}")

    # -- commands ----------------------------------------------------------------------------------
    def send_trace(self) -> None:
        """Send the acts recorded so far to the view as Chrome/Perfetto trace JSON (``dbg.export_trace``'s content);
        the view saves it as a file (its "trace JSON" button)."""
        self.send({"type": "trace", "name": f"{self.dbg.desc.job_name}-trace.json", "trace": trace_events(self.dbg)})

    def step(self) -> None:
        event = self.dbg.step()
        self._done(f"acted: {event}", None)

    def step_n(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"step_n takes a number of acts >= 1; got {n}")
        self._done_stop(self.dbg.step_n(n))

    def continue_(self) -> None:
        self._done_stop(self.dbg.continue_())

    def run_to(self, target: str) -> None:
        """Run until an actor acts next: ``job/op``, an op name, or a task node id ``t:<task_id>``."""
        self._done_stop(self.dbg.run_to(self._actor_name(target)))

    def run_to_end_of_job(self) -> None:
        self._done_stop(self.dbg.run_to_end_of_job())

    def back(self, n: int = 1) -> None:
        """Undo the last ``n`` acts (``dbg.back``; debug/history.py)."""
        self._went_back(self.dbg.back(n), f"back {n} act{'s' if n != 1 else ''}")

    def rewind(self, to: int) -> None:
        """Go to the state right after act ``to`` (``dbg.rewind``; 0 is the start)."""
        self._went_back(self.dbg.rewind(to=to), f"rewound to act {to}")

    def go_to_writer(self, name: str) -> None:
        """Go back to right after the act that last wrote a blob (``dbg.writer_of``), and inspect the blob there."""
        lbn = self.dbg.blob(self._lbn(name.strip())).lbn  # an op name or register id as its lbn
        writer = self.dbg.writer_of(lbn)
        if writer is None:
            raise ValueError(f"no act of this run wrote {lbn} yet (a variable holds the session's value)")
        self.dbg.rewind(to=writer)
        self._inspected = lbn
        readers = ", ".join(f"#{e.seq} {e.actor_name}" for e in self.dbg.readers_of(lbn)) or "none yet"
        self._went_back(writer, f"at the writer of {lbn}; read after it by: {readers}")

    def _went_back(self, last: Any, what: str) -> None:
        self._status = f"{what}: last act {last}" if last is not None else f"{what}: at the start"
        self._stop = None
        self._publish(None, full=True)  # lifetimes shrank and rows moved back: a full update, as restart sends

    def restart(self) -> None:
        self.dbg.restart()
        self._status, self._stop = "restarted", None
        self._publish(None, full=True)  # the run's record starts over: no delta against the old one

    def break_(self, kind: str, target: str | None = None) -> None:
        """Set a breakpoint: ``nan``/``inf`` (target: a blob, or none for any), ``op``, ``job``, ``actor``,
        ``blob`` (target required), ``predicate`` (target: an expression of the blob's array ``x``, e.g.
        ``abs(x).max() > 1e3``, or ``lbn: expression`` for one blob)."""
        target = (target or "").strip() or None
        dbg = self.dbg
        if kind in ("nan", "inf"):
            bp = dbg.break_on(**{kind: True}, blob=target)
        elif kind in ("op", "job", "actor"):
            if target is None:
                raise ValueError(f"a {kind} breakpoint needs a target ({kind} name)")
            bp = dbg.break_on(**{kind: self._actor_name(target) if kind == "actor" else target})
        elif kind == "blob":
            if target is None:
                raise ValueError("a blob breakpoint needs a blob name (op/out_0)")
            bp = dbg.break_on(blob=target)
        elif kind == "predicate":
            if target is None:
                raise ValueError("a predicate breakpoint needs an expression of x, e.g. abs(x).max() > 1e3")
            blob, _, expression = target.partition(":") if ":" in target and "/" in target.split(":")[0] \
                else ("", "", target)
            bp = dbg.break_on(predicate=_predicate(expression.strip()), blob=blob.strip() or None)
        else:
            raise ValueError(f"unknown breakpoint kind {kind!r}; kinds are nan, inf, op, job, actor, blob, predicate")
        self._done(f"set {bp}", self._stop)

    def unbreak(self, bp_id: int) -> None:
        bp = self.dbg.remove_breakpoint(bp_id)
        self._done(f"removed {bp}", self._stop)

    def inspect(self, name: str) -> None:
        """Inspect a blob: an lbn, an op name, a register id ``r:<id>`` or a task node id ``t:<id>``."""
        lbn = self._lbn(str(name).strip())
        self.dbg.blob(lbn)  # raises for a bad name before anything changes
        self._inspected = lbn
        self._done(f"inspecting {lbn}", self._stop)

    def inject(self, name: str, value: float | str) -> None:
        """Overwrite a live blob, as ``dbg.inject(name, array)``: ``value`` is a number (text such as ``"nan"`` or
        ``"-1e3"`` too) that fills the blob, or the text of an expression of its current values ``x`` with ``np``
        (``np.where(x == 0, 1, x)``), whose result must have the blob's shape."""
        if not str(name).strip():
            raise ValueError("inject needs a blob: an lbn (op/out_0), an op name, r:<id> or t:<id>")
        lbn = self._lbn(str(name).strip())
        current = self.dbg.value(lbn)
        number = _number(value)
        if number is not None:
            new, text = np.full(current.shape, number, current.dtype), repr(number)
        else:
            text = str(value).strip()
            new = _expression(text, "<inject value>")(current)
        self.dbg.inject(lbn, new)
        self._inspected = lbn
        self._done(f"injected {text} into {lbn}", self._stop)

    def inject_fill(self, name: str, value: float) -> None:
        """Overwrite a live blob with one value (``dbg.inject`` takes any array)."""
        self.inject(name, float(value))

    # -- names -------------------------------------------------------------------------------------
    def _actor_name(self, target: str) -> str:
        if target.startswith("t:"):
            return self.dbg.qualified(self.dbg.runtime.actors[_id(target, "task")])
        return target

    def _lbn(self, name: str) -> str:
        if not name:
            raise ValueError("inspect needs a blob: an lbn (op/out_0), an op name, r:<id> or t:<id>")
        plan = self.dbg.plan
        if name.startswith("r:"):
            desc = plan.regst_descs.get(_id(name, "register"))
            if desc is None or not desc.lbi2blob_desc:
                raise KeyError(f"register {name} holds no blob (a control register, or no such register)")
            return next(iter(desc.lbi2blob_desc))
        if name.startswith("t:"):
            task = plan.task(_id(name, "task"))
            lbns = task.exec_sequence[0].output_lbns
            if not lbns:
                raise KeyError(f"task {name} ({task.name}) produces no blob")
            return lbns[0]
        return name

    # -- state -------------------------------------------------------------------------------------
    def _done_stop(self, stop: Stop) -> None:
        if stop.blob is not None:  # a NaN/Inf/blob stop: show the blob that stopped it
            self._inspected = stop.lbn
        self._done(str(stop), stop)

    def _done(self, status: str, stop: Stop | None) -> None:
        self._status, self._stop = status, stop
        self._publish(None)

    def show_stuck(self) -> Any:
        """Draw the run's hang on the Plan (blocked actors by kind, the wait-for edges, the cycle in view: the
        widget does this itself when no actor can act while the call has not finished), or the plain Plan when
        nothing is stuck. Returns the WaitGraph drawn, or None."""
        from ..viz.payload_sections import stuck_section

        dbg = self.dbg
        hung = not dbg.finished and dbg.stepper.peek() is None
        graph = dbg.why_stuck() if hung else None
        if graph is not None and graph.blocked:
            lines = str(graph).splitlines()  # the whole text is under the graph: the status says the headline
            head = next((x for x in lines if x.startswith(("deadlock", "no cycle"))), lines[0])
            self._status = f"stuck: no actor can act and the call has not finished; {head}"
            if self.payload.get("stuck", {}).get("text") == str(graph):
                return graph  # drawn already
            payload = plan_payload(dbg.plan, dbg.session.job_set)
            payload["stuck"] = stuck_section(graph, dbg.plan, payload["graph"])
            payload["title"] += " · stuck"
            self.payload = payload
            return graph
        if "stuck" in self.payload:
            self.payload = plan_payload(dbg.plan, dbg.session.job_set)
        return None

    def _publish(self, error: str | None, full: bool = False) -> None:
        dbg = self.dbg
        nxt = None if dbg.finished else dbg.stepper.peek()
        if (nxt is None and not dbg.finished) or "stuck" in self.payload:  # hung, or no longer: redraw the Plan
            self.show_stuck()
        inspected = None
        if self._inspected is not None:
            try:
                inspected = dbg.blob(self._inspected).to_dict()
            except KeyError:
                self._inspected = None
        self.state = {
            "status": self._status, "error": error, "acts": dbg.acts, "finished": dbg.finished,
            "next_node": f"t:{nxt.actor_id}" if nxt is not None else None,
            "next_actor": dbg.qualified(nxt) if nxt is not None else None,
            **self._tables.actors(dbg, nxt, MAX_ACTORS, full),
            "breakpoints": [bp.to_dict() for bp in dbg.breakpoints],
            "inspected": inspected, "stop": self._stop.to_dict() if self._stop is not None else None,
            "last_act": _last_act(dbg),
            "memory": self._tables.memory(dbg, MAX_LIFETIMES, full),
        }
        self.update = self._stream.update(self.state, full=full)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        status = self._status.splitlines()[0]
        data["text/plain"] = f"<DebuggerWidget {self.dbg.desc.job_name}: {self.dbg.acts} acts; {status}>"
        return bundle


def _last_act(dbg: Debugger) -> dict[str, Any] | None:
    """The act the run made last, as the act view shows it: what acted and which kernel tier ran it."""
    if not dbg.recorder.acts:
        return None
    act = dbg.recorder.acts[-1]
    return {"index": act["index"], "node": act["node"], "actor": act["actor"], "job": act["job"],
            "reads": act["reads"], "writes": act["writes"], "tier": act.get("tier")}


def _id(text: str, what: str) -> int:
    try:
        return int(text[2:])
    except ValueError:
        raise ValueError(f"{text!r} is no {what} id (expected {text[:2]}<number>)") from None


def _message(err: Exception) -> str:
    return str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)  # KeyError quotes its text


def _expression(expression: str, where: str) -> Any:
    """A function of ``x`` (a blob's array) from the widget's text box, with ``np``. It is the user's own
    expression, evaluated in their kernel, as a breakpoint condition in any debugger is."""
    code = compile(expression, where, "eval")  # a syntax error is reported at once

    def function(x: np.ndarray) -> Any:
        return eval(code, {"np": np, "abs": abs, "__builtins__": {}}, {"x": x})

    function.__name__ = f"({expression})"
    return function


def _predicate(expression: str) -> Any:
    """A breakpoint predicate: an expression of ``x`` (the blob) with ``np``, true where the run should stop."""
    function = _expression(expression, "<breakpoint predicate>")

    def predicate(x: np.ndarray) -> bool:
        return bool(function(x))

    predicate.__name__ = function.__name__
    return predicate


def _number(value: float | str) -> float | None:
    """The value as a number when it is one (``1``, ``"nan"``, ``" -1e3 "``), else None (an expression)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None
