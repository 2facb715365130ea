"""``%%flowjob``: run a cell in a fresh session and show every stage of what it compiled."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .. import session as session_module
from .result import STAGES, FlowjobResult


@magics_class
class FlowMagics(Magics):
    @magic_arguments()
    @argument("-o", "--out", help="store the result (session, jobs, plan, debugger) under this name")
    @argument("--show", default=",".join(STAGES), help=f"stages to show, comma-separated: {','.join(STAGES)}")
    @argument("--debug", action="store_true", help="prepare a step debugger for the cell's last job call")
    @argument("--no-run", action="store_true", help="compile the job functions without running the calls")
    @cell_magic
    def flowjob(self, line: str, cell: str) -> FlowjobResult:
        """Run the cell in a fresh flowlab session; show its user, push, pull, model-io and main jobs, the
        Plan and the pass history. ``%%flowjob -o res --debug`` keeps the result and a debugger."""
        args = parse_argstring(self.flowjob, line)
        show = tuple(s.strip() for s in args.show.split(",") if s.strip())
        unknown = [s for s in show if s not in STAGES]
        if unknown:
            raise UsageError(f"--show got unknown stage(s) {unknown}; stages are {', '.join(STAGES)}")
        session_module.clear_default_session()
        session = session_module.default_session()
        result = FlowjobResult(session, show, interactive=getattr(self.shell, "kernel", None) is not None,
                               name=args.out)
        original = session.lazy_run

        def recording_run(desc: Any, call_args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            result.calls.append((desc.job_name, call_args))
            if args.no_run:
                session.function_descs.setdefault(desc.job_name, desc)
                session.try_init()  # compile everything, run nothing
                return None
            return original(desc, call_args, kwargs)

        session.lazy_run = recording_run  # type: ignore[method-assign]
        # The body runs as the cell the user sees: under the cell's own prompt number (IPython has already counted
        # the next one when a magic runs) and with the %%flowjob line as line 1, a comment here, so that op
        # locations and tracebacks ("Cell In[n], line m") number it as JupyterLab does.
        count, outer = self.shell.execution_count, calling_cell(self.shell)
        if outer is not None:
            self.shell.execution_count = outer
        try:
            outcome = self.shell.run_cell(f"# %%flowjob {line}".rstrip() + "\n" + cell, store_history=False,
                                          silent=False)
        finally:
            del session.lazy_run
            self.shell.execution_count = count
        result.error = outcome.error_before_exec or outcome.error_in_exec
        result.loc_names = cell_names(self.shell)
        if args.no_run and session.compiled is None and result.error is None and session.function_descs:
            session.try_init()
        if args.debug and result.calls and result.error is None:
            from ..debug import debug as make_debugger

            name, call_args = result.calls[-1]
            job_fn = self.shell.user_ns.get(name)
            if job_fn is not None:
                result.debugger = make_debugger(job_fn, *call_args)
        if args.out:
            self.shell.user_ns[args.out] = result
        return result

    @line_magic
    def flowlab(self, line: str) -> str:
        """``%flowlab``: the table of flags (flowlab/flags.py, docs/flags.md); ``%flowlab kernels numba`` or
        ``%flowlab kernels=numba replay=off`` sets flags for the rest of the kernel (``default`` unsets one);
        ``%flowlab kernels`` shows one."""
        from ..flags import FlagError, shown, source, table
        from ..flags import set as set_flags

        usage = "usage: %flowlab [NAME [VALUE|default]] or %flowlab NAME=VALUE ... (%flowlab alone lists the flags)"
        words = line.split()
        if not words:
            return table()
        pairs = [w.split("=", 1) for w in words] if all("=" in w for w in words) else None
        if pairs is None and len(words) == 2:
            pairs = [words]
        try:
            if pairs is None and len(words) == 1:
                return f"flowlab {words[0]}: {shown(words[0])} ({source(words[0])})"
            if pairs is None:
                raise UsageError(usage)
            set_flags(**{name: None if value == "default" else value for name, value in pairs})
        except FlagError as err:
            raise UsageError(f"%flowlab: {err}\n{usage}") from None
        return "\n".join(f"flowlab {name}: {shown(name)} ({source(name)})" for name, _ in pairs)


def cell_names(shell: Any) -> dict[str, str]:
    """IPython compiles each cell under a made-up file name (``1218483366.py``; ipykernel's
    ``/tmp/ipykernel_<pid>/<hash>.py``), which is what an op's ``loc`` names: map them to ``cell [n]``."""
    import os

    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    return {os.path.basename(str(file)): f"cell [{number}]" for file, number in names.items()}


def calling_cell(shell: Any) -> int | None:
    """The prompt number of the cell whose code called the magic (ipykernel compiles the cell, then calls
    ``run_cell_magic`` from it), or None when no cell did (a test calling ``run_cell_magic`` directly)."""
    import sys

    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    frame = sys._getframe(1)
    while frame is not None:
        number = names.get(frame.f_code.co_filename)
        if isinstance(number, int):
            return number
        frame = frame.f_back
    return None
