"""What the decoder does with a fault in its input: raise it (strict) or record it (resilient).

Every place that finds a damaged or missing part of a codestream (T.800 Annex A: the
tile-parts and their headers; Annex B: the packets; Annex D: the code-blocks) builds the
typed error that strict decoding raises, a :class:`~cinegpu.decode.errors.CodestreamError`
subclass carrying the byte offset, and hands it to :meth:`Strictness.fault`.  Strict
decoding raises it there; resilient decoding records it as a :class:`Fault` (the error, its
byte offset, the tile) and goes on, concealing what is lost (zeros).

``strict=True`` / ``strict=False`` keyword arguments of the public API are turned into a
policy by :meth:`Strictness.of`.  The numba loops are not involved: they return status codes
that the Python code around them turns into errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import CodestreamError

__all__ = ["Fault", "RESILIENT", "STRICT", "Strictness"]


@dataclass(frozen=True)
class Fault:
    """One fault found and concealed: the error strict decoding would raise, where, and its text.

    ``tile`` is the tile index (None: not tied to one tile).  ``text``, when given, is the
    line printed for it (reports, ``cinegpu decode --resilient``); without it the error's own
    message (with " at byte N") is printed.
    """

    error: CodestreamError
    tile: int | None = None
    text: str | None = None

    @property
    def offset(self) -> int | None:
        """Byte offset in the codestream where the fault lies (None where not tied to one)."""
        return self.error.offset

    def __str__(self) -> str:
        return str(self.error) if self.text is None else self.text


@dataclass(frozen=True)
class Strictness:
    """The decoding policy: ``strict`` raises the first fault, else faults are recorded."""

    strict: bool = True

    @staticmethod
    def of(strict: bool | Strictness) -> Strictness:
        """The policy for a ``strict=`` argument (a bool, or already a policy)."""
        if isinstance(strict, Strictness):
            return strict
        return STRICT if strict else RESILIENT

    def fault(self, error: CodestreamError, into: list[Fault] | None = None, *, tile: int | None = None,
              text: str | None = None) -> Fault:
        """Raise ``error`` (strict); else append its :class:`Fault` to ``into`` and return it.

        ``into`` None: the fault is recorded elsewhere (e.g. the report of a missing tile).
        """
        if self.strict:
            raise error
        found = Fault(error, tile, text)
        if into is not None:
            into.append(found)
        return found


STRICT = Strictness(True)
RESILIENT = Strictness(False)
