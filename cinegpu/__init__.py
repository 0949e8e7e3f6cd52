"""cinegpu: a JPEG 2000 decoder, player and playback server for digital cinema, with the matching
GPU encoder for mastering.

The sub-packages are layers, each importing only those below it (ARCHITECTURE.md): ``decode``
(the codec core) <- ``encode`` <- ``media`` <- ``jobs``, with ``interop`` <- ``player`` on top.
The public entry points are :func:`cinegpu.decode.decode`, :func:`cinegpu.encode.encode`,
:func:`cinegpu.media.open_source` and the ``cinegpu`` command (:mod:`cinegpu.player.cli`).
"""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["PRODUCT", "__version__"]

#: The product's name, as packages and files it writes name their maker.
PRODUCT = "cinegpu"
try:
    #: The installed distribution's version (PEP 440); "0+unknown" run from a source tree that was
    #: not installed.
    __version__ = version("cinegpu")
except PackageNotFoundError:
    __version__ = "0+unknown"
