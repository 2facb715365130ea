"""The value a mirrored return is pulled as. It sits in ir/, below both the runtime (whose pull kernel builds it)
and the front end (``flowlab.typing`` re-exports it as ``tp.MirroredList``), so neither imports the other."""

from __future__ import annotations

from collections.abc import Sequence


class MirroredList(list):
    """A mirrored return as pulled: one ndarray per device (what ``tp.ListNumpy`` gives), and ``logical``, the
    blob seen consistently (the pieces joined on their split axis, or the whole blob where every device holds it,
    B), which a ``tp.Numpy`` annotation gives (OneFlow's ``LocalMirroredTensor.numpy()`` and its ``concat_axis``)."""

    def __init__(self, pieces: Sequence[object], logical: object) -> None:
        super().__init__(pieces)
        self.logical = logical
