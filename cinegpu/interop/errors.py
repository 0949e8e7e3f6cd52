"""The one exception of :mod:`cinegpu.interop`: a failed GL or CUDA call, named."""

from __future__ import annotations


class InteropError(RuntimeError):
    """A GL or CUDA call failed; ``call`` names it (e.g. ``"cudaGraphicsMapResources"``)."""

    def __init__(self, call: str, detail: str) -> None:
        super().__init__(f"{call} failed: {detail}")
        self.call = call
        self.detail = detail


#: Why quad-buffered stereo cannot be shown (the message of :class:`NoStereoDisplay`).
NO_STEREO = ("this display offers no quad-buffered stereo (a 3D projector or monitor with its driver's "
             "stereo mode on; never headless): --stereo frame-sequential shows the eyes in turn instead")


class NoStereoDisplay(InteropError):
    """The display offers no quad-buffered stereo OpenGL config (``stereo=True`` of
    :func:`~cinegpu.interop.window.open_window`)."""
