"""A session's variables to and from a checkpoint directory, by running the System-ModelSave and System-ModelLoad
jobs (compiler/system_jobs.py) with the directory's path as their pushed blob. Everything is checked before a job
runs; the Session calls these under its lock (``Session.save_checkpoint``/``load_checkpoint``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .compiler.system_jobs import PATH_CAPACITY
from .runtime import JobInstance
from .runtime.checkpoint_io import CheckpointError, check_load, check_root, variable_dir

if TYPE_CHECKING:
    from .session import Session


def save(session: Session, root: Path) -> None:
    require_jobs(session, "save")
    check_root(root, "save")
    if root.exists() and any(root.iterdir()):
        raise CheckpointError(f"checkpoint directory {root} is not empty; OneFlow refuses to save into a "
                              "non-empty directory, so choose a new one")
    if "System-ModelSave" not in session.plan.job_names:
        raise CheckpointError("the session's jobs have no variables to save")
    for name in session.variable_arrays():
        variable_dir(root, name)  # a name escaping the directory fails before anything is written
    root.mkdir(parents=True, exist_ok=True)
    session._run_jobs([JobInstance("System-ModelSave", push_array=encode_path(root))])
    (root / "snapshot_done").touch()


def load(session: Session, root: Path) -> None:
    require_jobs(session, "load")
    check_root(root, "load")
    # logical shapes and dtypes (a variable split over devices is checked whole), without copying anything
    arrays = {name: np.broadcast_to(np.zeros((), v.dtype), v.shape) for name, v in session.variables().items()}
    if not arrays:
        raise CheckpointError("the session's jobs have no variables to load")
    check_load(root, arrays)  # raises on any bad file; warns for each missing variable
    session._run_jobs([JobInstance("System-ModelLoad", push_array=encode_path(root))])


def require_jobs(session: Session, what: str) -> None:
    if session.compiled is None and not session.function_descs:
        raise CheckpointError(f"the session has no job functions, so it has no variables to {what}; define "
                              "the @flow.global_function jobs first")


def encode_path(root: Path) -> np.ndarray:
    """A path as the NUL-padded UTF-8 blob the model-io jobs' ForeignInput carries."""
    raw = str(root.resolve()).encode("utf-8")
    if len(raw) >= PATH_CAPACITY:
        raise CheckpointError(f"checkpoint path is {len(raw)} bytes long; at most {PATH_CAPACITY - 1} fit")
    blob = np.zeros(PATH_CAPACITY, np.uint8)
    blob[: len(raw)] = np.frombuffer(raw, np.uint8)
    return blob
