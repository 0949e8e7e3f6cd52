"""A decoded video frame's Y'CbCr planes (:class:`YCbCrPlanes`) and their R'G'B' by our own
arithmetic (:func:`to_rgb48`), for mastering on the GPU: the planes go up as decoded (4:2:2
10-bit is a third of the bytes of its 16-bit R'G'B') and the GPU converts them
(:mod:`.ycbcr_gpu`, the twin of :func:`to_rgb48`, bit for bit), so that no core runs
libswscale's conversion, a large part of the CPU time of reading a ProRes frame
(docs/performance.md, "video frames sent up as Y'CbCr planes").

The conversion is ITU-R BT.709-6 / BT.601-7 / BT.2020-2's (item 3.2 to 3.5 of each: E'Y, and
E'CB, E'CR scaled to -0.5 .. 0.5) read backwards, with the quantisation of ITU-R BT.2100's
Table 9 ("narrow" range: Y' from 16 x 2^(n-8) to 235 x 2^(n-8), C from 16 to 240) or full
range (0 .. 2^n - 1, the chroma offset 2^(n-1)).  Subsampled chroma (4:2:2: every second
column) is centred between its two luma columns, as libswscale sites it by default, and
brought to every column by a four-tap cubic of Keys' family with a = -0.6 (libswscale's
``SWS_BICUBIC``); at the picture's edges the nearest chroma sample repeats.  The result is
within one 16-bit code value of the equations in float64 (and of zimg's float conversion for
4:4:4); libswscale's fixed-point conversion (what :meth:`.frames.VideoFrames.__call__` gives)
is off from them by up to about 1/256 of the range, and at a hard chroma edge the two
interpolations differ by up to a few per cent (tests/media/video/test_ycbcr.py holds each).

Every step is a float32 operation rounded on its own (no fused multiply-add), in the order
:func:`to_rgb48` writes it, so that the GPU's kernel computes the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from cinegpu.media.images.colour import LUMA_WEIGHTS

__all__ = ["PIX_FMTS", "YCbCrPlanes", "coefficients", "to_rgb48"]

#: Libavutil pixel formats :func:`to_rgb48` takes: planar Y'CbCr 4:2:2 and 4:4:4 (with an
#: alpha plane, which is left out) of 8 to 16 bits, little-endian; the value is
#: (bits, chroma columns per luma column as a shift, full range regardless of the tag).
PIX_FMTS = {
    "yuv422p": (8, 1, False), "yuv422p10le": (10, 1, False), "yuv422p12le": (12, 1, False),
    "yuv422p16le": (16, 1, False), "yuva422p10le": (10, 1, False), "yuva422p12le": (12, 1, False),
    "yuv444p": (8, 0, False), "yuv444p10le": (10, 0, False), "yuv444p12le": (12, 0, False),
    "yuv444p16le": (16, 0, False), "yuva444p10le": (10, 0, False), "yuva444p12le": (12, 0, False),
    "yuvj422p": (8, 1, True), "yuvj444p": (8, 0, True),
}
#: Kr, Kb of the H.273 matrix coefficients (FFmpeg's AVColorSpace) :func:`to_rgb48` takes:
#: BT.709, BT.601 (625 and 525 lines) and BT.2020 non-constant luminance.
MATRICES = {1: LUMA_WEIGHTS["bt709"], 5: LUMA_WEIGHTS["bt601"], 6: LUMA_WEIGHTS["bt601"],
            9: LUMA_WEIGHTS["bt2020"]}
#: Keys' cubic parameter of the chroma taps (libswscale's bicubic: B = 0, C = 0.6).
CUBIC_A = -0.6


def _keys(d: float, a: float = CUBIC_A) -> float:
    """Keys' cubic convolution kernel at distance ``d`` (in chroma samples)."""
    d = abs(d)
    if d <= 1:
        return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
    if d < 2:
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a
    return 0.0


@dataclass(frozen=True)
class YCbCrPlanes:
    """One frame's planes as decoded: ``y`` (H, W), ``cb`` and ``cr`` (H, W >> ``shift``)
    unsigned integer code values of ``bits`` bits (uint8 or uint16, rows possibly padded:
    views of the decoder's buffers); ``kr``, ``kb`` the matrix's luma weights;
    ``full_range``: code values span 0 .. 2^bits - 1 (else BT.2100's narrow range)."""

    y: np.ndarray
    cb: np.ndarray
    cr: np.ndarray
    bits: int
    shift: int
    kr: float
    kb: float
    full_range: bool

    @property
    def shape(self) -> tuple[int, int, int]:
        """The (H, W, 3) of the R'G'B' picture they make."""
        return (*self.y.shape, 3)


def coefficients(p: YCbCrPlanes) -> np.ndarray:
    """The float32 constants of the conversion, in the order the kernel takes them: luma
    offset and scale, chroma offset and scale, R from Cr, G from Cb, G from Cr, B from Cb,
    then the even and the odd output columns' four chroma weights."""
    top = (1 << p.bits) - 1
    if p.full_range:
        y_off, y_scale, c_off, c_scale = 0.0, 1 / top, float(1 << (p.bits - 1)), 1 / top
    else:
        s = 1 << (p.bits - 8)
        y_off, y_scale, c_off, c_scale = 16.0 * s, 1 / (219 * s), 128.0 * s, 1 / (224 * s)
    kr, kb = p.kr, p.kb
    kg = 1 - kr - kb
    matrix = [2 * (1 - kr), -2 * kb * (1 - kb) / kg, -2 * kr * (1 - kr) / kg, 2 * (1 - kb)]
    if p.shift:             # output column 2k sits at chroma k - 1/4, column 2k + 1 at k + 1/4
        even = [_keys(d) for d in (1.75, 0.75, 0.25, 1.25)]     # taps k-2 .. k+1
        odd = [_keys(d) for d in (1.25, 0.25, 0.75, 1.75)]      # taps k-1 .. k+2
    else:
        even = odd = [0.0, 0.0, 1.0, 0.0]                       # the sample itself
    return np.array([y_off, y_scale, c_off, c_scale, *matrix, *even, *odd], np.float32)


def to_rgb48(p: YCbCrPlanes) -> np.ndarray:
    """The (H, W, 3) uint16 R'G'B' (full range, white 65535) of ``p``: the twin of
    ``cuda/ycbcr.cu``'s ``ycbcr_to_rgb48``, the same float32 operations in the same order."""
    out = np.empty(p.shape, np.uint16)
    _convert(p.y, p.cb, p.cr, coefficients(p), p.shift, out)
    return out


@njit(cache=True, nogil=True)
def _chroma(plane, row, first, c, base):      # pragma: no cover  (numba)
    """Chroma at one output column: the taps at ``first`` .. ``first + 3`` (clamped to the
    plane) times the weights ``c[base:base + 4]``, summed in that order (the kernel's
    ``chroma``), then offset and scaled."""
    last = plane.shape[1] - 1
    acc = np.float32(0)
    for t in range(4):
        k = min(max(first + t, 0), last)
        term = np.float32(plane[row, k]) * c[base + t]
        acc = term if t == 0 else acc + term
    return (acc - c[2]) * c[3]


@njit(cache=True, nogil=True)
def _code16(v):                               # pragma: no cover  (numba)
    return np.uint16(np.rint(min(max(v, np.float32(0)), np.float32(1)) * np.float32(65535)))


@njit(cache=True, nogil=True)
def _convert(y, cb, cr, c, shift, out):       # pragma: no cover  (numba)
    """:func:`to_rgb48` into ``out``, pixel by pixel as the kernel computes them: output
    column 2k of 4:2:2 takes chroma k-2 .. k+1 with the even weights (``c[8:12]``), column
    2k+1 chroma k-1 .. k+2 with the odd ones (``c[12:16]``); 4:4:4 the weights 0, 0, 1, 0
    from x-2 (the sample itself, exactly)."""
    for row in range(y.shape[0]):
        for x in range(y.shape[1]):
            odd = shift != 0 and (x & 1) == 1
            if shift != 0:
                first = (x >> 1) - 1 if odd else (x >> 1) - 2
            else:
                first = x - 2
            base = 12 if odd else 8
            yv = (np.float32(y[row, x]) - c[0]) * c[1]
            cbv = _chroma(cb, row, first, c, base)
            crv = _chroma(cr, row, first, c, base)
            out[row, x, 0] = _code16(yv + c[4] * crv)
            out[row, x, 1] = _code16((yv + c[5] * cbv) + c[6] * crv)
            out[row, x, 2] = _code16(yv + c[7] * cbv)
