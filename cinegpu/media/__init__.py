"""Media: DCP and IMF packages, MXF track files and JPEG 2000 frame sequences.

``open_source(path)`` gives the picture of any of them as one flat run of codestreams;
``describe(path)`` is the text ``cinegpu info`` prints; ``MediaError`` is the one error family
(``CorruptMedia``, ``UnsupportedMedia``, ``EncryptedMedia``: see :mod:`.errors`).
"""

from cinegpu.media.errors import CorruptMedia, EncryptedMedia, MediaError, UnsupportedMedia
from cinegpu.media.source import Source, open_source
from cinegpu.media.describe import describe   # after .source; binds the function over the submodule's name


__all__ = ["CorruptMedia", "EncryptedMedia", "MediaError", "Source", "UnsupportedMedia", "describe", "open_source"]
