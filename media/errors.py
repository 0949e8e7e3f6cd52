"""The one error family of :mod:`cinegpu.media`."""

from __future__ import annotations

import os


class MediaError(ValueError):
    """Bad or unsupported package, track file or frame sequence.

    The message names the file and, where known, the byte offset at which the
    problem was found; both are also kept as attributes.
    """

    def __init__(self, path: str | os.PathLike | None, message: str, offset: int | None = None):
        self.path = None if path is None else os.fspath(path)
        self.offset = offset
        self.reason = message
        where = self.path or "<input>"
        if offset is not None:
            where = f"{where} at byte {offset}"
        super().__init__(f"{where}: {message}")
