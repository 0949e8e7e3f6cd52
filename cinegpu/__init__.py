"""cinegpu: a JPEG 2000 decoder, player and playback server for digital cinema, with the matching
GPU encoder for mastering.

The sub-packages are layers, each importing only those below it (ARCHITECTURE.md): ``decode``
(the codec core) <- ``encode`` <- ``media`` <- ``jobs``, with ``interop`` <- ``player`` on top.
The public entry points are :func:`cinegpu.decode.decode`, :func:`cinegpu.encode.encode`,
:func:`cinegpu.media.open_source` and the ``cinegpu`` command (:mod:`cinegpu.player.cli`).
"""
