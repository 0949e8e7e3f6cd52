"""The one error family of :mod:`cinegpu.media`: :class:`MediaError` and what kind it is.

- :class:`CorruptMedia`: bytes that break the rules of the format they are declared as (by
  their suffix, their container or the package that names them): a truncated KLV, an index
  entry pointing nowhere, malformed XML, a frame of a track file that is not a codestream.
- :class:`UnsupportedMedia`: input that is valid, or not recognisably broken, but that cinegpu
  does not read: a file that is none of a package, track file, codestream or image, a track
  file without a picture, a TIFF or DPX layout not implemented, a size beyond the limits.
- :class:`EncryptedMedia` (an ``UnsupportedMedia``): encrypted essence (SMPTE ST 429-6), which
  needs a KDM to decrypt; cinegpu does not play it.
- :class:`KdmRefused`: a Key Delivery Message that is well formed but does not unlock: its
  signature or certificate chain does not hold, the private key is another recipient's, it is
  for another composition, or the time is outside its window.
- :class:`ExposedKey`: a private key or content key file that others may read, or that others
  could replace (its folder writable by them), refused as OpenSSH refuses such keys; the
  message says which ``chmod`` fixes it.
- a plain :class:`MediaError`: anything else about a file, e.g. one that is missing or cannot
  be read (the ``OSError`` named), or a destination that cannot be written.

All keep the ``MediaError(path, message, offset=None)`` constructor.
"""

from __future__ import annotations

import os

from cinegpu.decode.errors import UnsupportedFeature

__all__ = ["CorruptMedia", "EncryptedMedia", "ExposedKey", "KdmRefused", "MediaError", "UnsupportedMedia", "media_error_of"]


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


class CorruptMedia(MediaError):
    """Input that breaks the rules of its format (damaged, truncated or hostile)."""


class UnsupportedMedia(MediaError):
    """Input cinegpu does not read: not a format it knows, or a part of one it does not implement."""


class EncryptedMedia(UnsupportedMedia):
    """Encrypted essence (SMPTE ST 429-6): a KDM is needed to decrypt it."""


class KdmRefused(MediaError):
    """A KDM (SMPTE ST 430-1) that does not unlock the content: broken signature or chain,
    another recipient's key, another composition, outside its validity window."""


class ExposedKey(MediaError):
    """A private key or key file that others may read, or that others could replace (its folder
    writable by them): refused, with the ``chmod`` that fixes it."""


def media_error_of(exc: BaseException) -> type[MediaError]:
    """The media error class for a codec error met while reading media: a stream using a
    feature the decoder does not implement is :class:`UnsupportedMedia`, any other bad
    codestream :class:`CorruptMedia`."""

    return UnsupportedMedia if isinstance(exc, UnsupportedFeature) else CorruptMedia
