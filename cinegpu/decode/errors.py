"""The errors of the codec core, one family per cause.

- :class:`CodestreamError` (a ``ValueError``): the input. Bad input, whatever it is, raises
  a subclass carrying the byte offset where the problem was found and what was expected
  there; nothing else (``struct.error``, ``IndexError``, ``ZeroDivisionError``) may escape
  :func:`cinegpu.decode.decode`. :class:`TruncatedCodestream`, :class:`InvalidSegment` and
  :class:`MisplacedMarker` are input that breaks ISO/IEC 15444-1. :class:`UnsupportedFeature`
  is legal input using what this decoder does not implement (Part 2 and Part 15 features,
  :class:`LimitExceeded` decodes beyond the limits); it stays a ``CodestreamError`` because
  it is still a property of the input, which callers (the conformance and fuzz tests, the
  ``decode``, ``info`` and ``bench`` commands, the pipeline's per-frame results) report and
  conceal like damage: the frame cannot be decoded here, whatever the machine.
- :class:`PipelineError` (a ``RuntimeError``): the multi-process decode pipeline failed, not
  the input; :class:`WorkerCrashed` when a worker process died with a frame in hand.
- :class:`BackendUnavailable` (a ``RuntimeError``): the machine lacks what a back end needs
  (CuPy, a CUDA driver, a device); the message says what is missing and how to install it.

One warning, :class:`LenientWarning` (a ``UserWarning``, through :mod:`warnings`): input that
breaks the standard in a way OpenJPEG and Grok accept (bytes after the codestream box, a
codestream box running past the end of the file, a header box outside the JP2 Header box); it
is decoded as they decode it, and the warning says what was tolerated.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailable",
    "CodestreamError",
    "InvalidSegment",
    "LenientWarning",
    "LimitExceeded",
    "MisplacedMarker",
    "PipelineError",
    "TruncatedCodestream",
    "UnsupportedFeature",
    "WorkerCrashed",
]

#: What to install for the CUDA back end (pyproject.toml's extras: CuPy and the CUDA bindings).
CUDA_INSTALL_HINT = "pip install 'cinegpu[cuda13]' (or 'cinegpu[cuda12]' for a CUDA 12 driver)"


class CodestreamError(ValueError):
    """A codestream or JP2 file that cannot be decoded.

    ``offset`` is the byte offset in the input (``None`` when not tied to one
    place); ``what`` is the plain message without the offset.
    """

    def __init__(self, what: str, offset: int | None = None) -> None:
        self.what = what
        self.offset = offset
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{what}{where}")


class TruncatedCodestream(CodestreamError):
    """The data ends before a segment, packet or box that it announces."""


class InvalidSegment(CodestreamError):
    """A marker segment or packet whose contents break ISO/IEC 15444-1."""


class MisplacedMarker(CodestreamError):
    """A marker where the codestream syntax (T.800 Annex A.3) allows none."""


class UnsupportedFeature(CodestreamError):
    """Legal input that this decoder does not handle (yet), e.g. Part 15."""


class LimitExceeded(UnsupportedFeature):
    """Legal input whose decode would cost more than allowed (``cinegpu.decode.limits``).

    Raised before anything large is allocated: an image of more samples than ``max_pixels``,
    a decode needing more than ``max_memory`` bytes, more plan and packet work than the
    input's size allows; and instead of a ``MemoryError`` when an allocation fails anyway.
    ``needed`` and ``limit`` hold the two figures compared (samples, bytes or work units).
    """

    def __init__(self, what: str, offset: int | None = None, *, needed: int | None = None,
                 limit: int | None = None) -> None:
        self.needed = needed
        self.limit = limit
        super().__init__(what, offset)


class LenientWarning(UserWarning):
    """Input that breaks ISO/IEC 15444-1 but that OpenJPEG and Grok decode, decoded as they do.

    Warned (``warnings.warn``), never raised: a JP2 file with stray bytes after its last box,
    a Contiguous Codestream box whose length runs past the end of the file (what is there is
    used), an ihdr/colr/pclr/cmap/cdef box outside the JP2 Header box.
    """


class PipelineError(RuntimeError):
    """The decode pipeline (:mod:`cinegpu.decode.pipeline`) failed: a worker that cannot start,
    or a bug reported by one. Not a property of the input; the frame may decode elsewhere."""


class WorkerCrashed(PipelineError):
    """The worker process decoding this frame died (the frame is lost; the worker is replaced)."""


class BackendUnavailable(RuntimeError):
    """A back end was asked for by name but this machine cannot run it.

    ``backend`` is the name asked for ("cuda"); ``missing`` what is lacking (CuPy, a usable
    CUDA driver, a device); ``hint`` how to get it. The message holds all three.
    """

    def __init__(self, backend: str, missing: str, hint: str = CUDA_INSTALL_HINT) -> None:
        self.backend = backend
        self.missing = missing
        self.hint = hint
        super().__init__(f"{backend} back end unavailable: {missing}; {hint}")
