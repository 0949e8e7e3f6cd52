"""What the decoder does with a fault in its input: raise it (strict) or record it (lenient).

Every place that finds a departure from ISO/IEC 15444-1 in a codestream (T.800 Annex A: the
tile-parts and their headers; Annex B: the packets; Annex D: the code-blocks) builds the
typed error that strict decoding raises, a :class:`~cinegpu.decode.errors.CodestreamError`
subclass carrying the byte offset, and hands it to the policy, in one of two ways:

- :meth:`Strictness.tolerate`: input that OpenJPEG and Grok decode, decoded as they decode it
  (more coding passes than a code-block's bit-planes hold, zero bit-planes past Mb, a COD in
  a later tile-part header...): the picture is theirs, nothing is concealed.
- :meth:`Strictness.fault`: damage (data cut short, a packet header that breaks off, a
  code-block that cannot be decoded): what is lost is concealed (zeros).

Strict decoding raises the error at either (``cinegpu check --decode``, the conformance
tests); lenient decoding, the default, records it as a :class:`Fault` (the error, its byte
offset, the tile, and whether it was only tolerated) and goes on.  :func:`cinegpu.decode.decode`
then warns of each with a :class:`~cinegpu.decode.errors.LenientWarning`.

``strict=True`` / ``strict=False`` keyword arguments of the public API are turned into a
policy by :meth:`Strictness.of`.  The numba loops are not involved: they return status codes
that the Python code around them turns into errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import CodestreamError

__all__ = ["Fault", "LENIENT", "STRICT", "Strictness"]


@dataclass(frozen=True)
class Fault:
    """One fault found and passed over: the error strict decoding would raise, where, its text.

    ``tile`` is the tile index (None: not tied to one tile).  ``text``, when given, is the
    line printed for it (reports, ``cinegpu decode``'s warnings); without it the error's own
    message (with " at byte N") is printed.  ``tolerated``: decoded as OpenJPEG and Grok decode
    it, nothing concealed (:meth:`Strictness.tolerate`); else what it lost is concealed.
    """

    error: CodestreamError
    tile: int | None = None
    text: str | None = None
    tolerated: bool = False

    @property
    def offset(self) -> int | None:
        """Byte offset in the codestream where the fault lies (None where not tied to one)."""
        return self.error.offset

    def __str__(self) -> str:
        return str(self.error) if self.text is None else self.text

    def line(self) -> str:
        """The fault as one line that says where: its text, led by its tile where the text
        does not name one ("tile 5: tile missing" reads as "tile 5 missing")."""
        text = str(self)
        if self.tile is not None and text == "tile missing":
            return f"tile {self.tile} missing"
        if self.tile is None or text.startswith("tile "):
            return text
        return f"tile {self.tile}: {text}"


@dataclass(frozen=True)
class Strictness:
    """The decoding policy: ``strict`` raises the first fault, else (lenient) faults are recorded."""

    strict: bool = True

    @staticmethod
    def of(strict: bool | Strictness) -> Strictness:
        """The policy for a ``strict=`` argument (a bool, or already a policy)."""
        if isinstance(strict, Strictness):
            return strict
        return STRICT if strict else LENIENT

    def fault(self, error: CodestreamError, into: list[Fault] | None = None, *, tile: int | None = None,
              text: str | None = None) -> Fault:
        """Damage: raise ``error`` (strict); else append its :class:`Fault` (what it lost is
        concealed) to ``into`` and return it.

        ``into`` None: the fault is recorded elsewhere (e.g. the report of a missing tile).
        """
        return self._met(error, into, Fault(error, tile, text))

    def tolerate(self, error: CodestreamError, into: list[Fault] | None = None, *, tile: int | None = None,
                 text: str | None = None) -> Fault:
        """A departure the peers decode: raise ``error`` (strict); else append its
        :class:`Fault` marked ``tolerated`` to ``into`` and return it."""
        return self._met(error, into, Fault(error, tile, text, tolerated=True))

    def _met(self, error: CodestreamError, into: list[Fault] | None, found: Fault) -> Fault:
        if self.strict:
            raise error
        if into is not None:
            into.append(found)
        return found


STRICT = Strictness(True)
LENIENT = Strictness(False)
