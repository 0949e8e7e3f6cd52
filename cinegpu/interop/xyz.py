"""X'Y'Z' pictures that the display converts: the DCI output transform in the presenter's shader.

The CPU back end's pictures of X'Y'Z' content (DCPs) are not turned into RGBA16 on the host: the
transform (:func:`cinegpu.decode.transform.xyz_to_rgb`: per sample a 2.6 power, a 3x3 matrix and
the display's inverse power) takes about 0.7 s a 4K frame in numpy, more than a player's
process has at 24 frames a second. An :class:`XYZPlanes` carries the decoded X', Y' and Z'
planes instead; the host target uploads them into one 16-bit texture of three planes stacked
(:data:`XYZ_PLANES`) and the presenter's X'Y'Z' program does the transform per drawn pixel, in
float32 and in the reference's order (its output within one 16-bit code value of it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cinegpu.decode.transform import xyz_to_rgb
from cinegpu.decode.transform.display import display_gamma, xyz_decode_lut, xyz_to_rgb_matrix

__all__ = ["XYZ_PLANES", "XYZPlanes", "XYZTexture", "shader_constants"]

#: Planes stacked in an X'Y'Z' texture: X' rows first, then Y', then Z'; an anaglyph's six, the
#: left eye's three and then the right one's.
XYZ_PLANES = 3


@dataclass(frozen=True)
class XYZPlanes:
    """A picture as X'Y'Z' code values (three (H, W) integer planes, ``in_bits`` each, host
    memory), shown through ``primaries`` (``"p3d65"`` or ``"rec709"``, as
    :func:`~cinegpu.decode.transform.xyz_to_rgb` takes them). ``anaglyph``: six planes, the
    left eye's X'Y'Z' then the right one's, shown as red from the left eye's picture and green
    and blue from the right one's (:func:`cinegpu.player.stereo.join`)."""

    planes: tuple
    in_bits: int
    primaries: str
    anaglyph: bool = False

    @property
    def shape(self) -> tuple[int, int, int]:
        """(H, W, 4): the shape of the RGBA16 picture it stands for."""
        h, w = self.planes[0].shape
        return h, w, 4

    def map(self, fn: Callable) -> XYZPlanes:
        """The same picture with ``fn`` applied to each plane (a crop, a join, an upscale)."""
        return XYZPlanes(tuple(fn(p) for p in self.planes), self.in_bits, self.primaries, self.anaglyph)

    def rgba16(self) -> np.ndarray:
        """The RGBA16 picture itself, by the reference transform (host, numpy)."""
        def picture(planes):
            return xyz_to_rgb(*planes, primaries=self.primaries, out_bits=16, alpha=True, in_bits=self.in_bits)

        if not self.anaglyph:
            return picture(self.planes)
        out = picture(self.planes[XYZ_PLANES:])
        out[..., 0] = picture(self.planes[:XYZ_PLANES])[..., 0]
        return out


@dataclass(frozen=True)
class XYZTexture:
    """What the presenter needs to draw an X'Y'Z' texture: its GL name, the precision and
    display primaries of its code values, and whether it holds an anaglyph's six planes."""

    texture: int
    in_bits: int
    primaries: str
    anaglyph: bool = False


def shader_constants(in_bits: int, primaries: str) -> dict:
    """The X'Y'Z' program's constants, as the reference (:func:`~cinegpu.decode.transform.xyz_to_rgb`)
    and its CUDA twin take them: ``decode``, the float32 table of code value -> relative linear
    XYZ (``xyz_decode_lut``), 4,096 entries a row; ``in_max``, the top code value it clips to;
    ``to_rgb``, the float32 matrix to linear RGB (row-major); ``inv_gamma``, float32 1 / the
    display's gamma (2.6 for P3-D65, 2.4 for Rec. 709)."""
    table = xyz_decode_lut(in_bits)
    return {"decode": table.reshape(-1, min(table.size, 4096)), "in_max": (1 << in_bits) - 1,
            "to_rgb": xyz_to_rgb_matrix(primaries).astype(np.float32),
            "inv_gamma": float(np.float32(1.0 / display_gamma(primaries)))}
