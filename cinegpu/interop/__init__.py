"""OpenGL texture targets that decoded frames are written into.

:func:`choose_target` picks, by a quiet probe, the CUDA surface target, the
pixel-buffer target or the host upload; see :mod:`.targets` for the life
cycle (open / write / close) and :mod:`.gl` for the shared GL objects.
"""

from .errors import InteropError
from .targets import TARGETS, HostUploadTarget, PixelBufferTarget, SurfaceTarget, TextureTarget, choose_target

__all__ = ["InteropError", "TextureTarget", "HostUploadTarget", "SurfaceTarget", "PixelBufferTarget",
           "choose_target", "TARGETS"]
