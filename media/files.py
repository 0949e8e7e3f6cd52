"""Reading a whole small file the media layer names (a codestream, a KDM, an SRT file, a
subtitle resource) with a bound on its size, checked before a byte is read."""

from __future__ import annotations

from pathlib import Path

from .errors import MediaError, UnsupportedMedia

__all__ = ["read_bounded"]


def read_bounded(path, limit: int, what: str) -> bytes:
    """The bytes of ``path``: :class:`~.errors.UnsupportedMedia` when it has more than
    ``limit`` bytes (``what`` names the kind of file), :class:`~.errors.MediaError` naming the
    ``OSError`` when it cannot be read."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > limit:
            raise UnsupportedMedia(p, f"{what} of {size} bytes, more than the {limit} bytes cinegpu reads")
        return p.read_bytes()
    except OSError as exc:
        raise MediaError(p, f"cannot read: {exc.strerror or exc}") from None
