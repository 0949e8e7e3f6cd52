"""The one exception of :mod:`cinegpu.interop`: a failed GL or CUDA call, named."""

from __future__ import annotations


class InteropError(RuntimeError):
    """A GL or CUDA call failed; ``call`` names it (e.g. ``"cudaGraphicsMapResources"``)."""

    def __init__(self, call: str, detail: str) -> None:
        super().__init__(f"{call} failed: {detail}")
        self.call = call
        self.detail = detail
