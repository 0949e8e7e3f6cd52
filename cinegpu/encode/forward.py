"""The forward stage of one tile on the CPU (numpy): DC level shift (G.1.2), forward
RCT / ICT (G.2, G.3), forward DWT (F.4) and quantisation (E.1), into the tile's
flat coefficient buffer laid out as the decode plan says (band after band,
each row-major at :attr:`Band.offset`).

The transforms are the decoder's own forward twins
(:mod:`cinegpu.decode.transform`); the CUDA back end
(:mod:`cinegpu.encode.gpu`) computes the same buffer on the GPU.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from cinegpu.decode.plan import TilePlan
from cinegpu.decode.transform import fdwt_53, fdwt_97, forward_ict, forward_rct

__all__ = ["code_value_samples", "code_value_step", "tile_planes", "forward_tile",
           "place_bands", "quantize_band"]


def code_value_step(top: float, bits: int) -> tuple[np.float32, np.float32]:
    """(scale, peak) of IMF's R'G'B' code values at ``bits`` per component: float32 1 / top
    (the scaling of :func:`cinegpu.media.images.frames.unit_scale`) and 2^bits - 1, as
    :func:`cinegpu.encode.gpu.code_values` passes them to its kernel."""
    return np.float32(1.0 / top), np.float32((1 << int(bits)) - 1)


def code_value_samples(x, code_values) -> np.ndarray:
    """int32 ``rint(peak clip(x scale, 0, 1))`` of samples ``x``, ``code_values`` = (scale,
    peak) (:func:`code_value_step`), every operation in float32: the numpy twin of forward.cu's
    ``code_value`` (and of :func:`cinegpu.encode.gpu.code_values`), bit for bit."""
    scale, peak = (np.float32(v) for v in code_values)
    v = np.asarray(x).astype(np.float32) * scale
    np.clip(v, np.float32(0), np.float32(1), out=v)
    return np.rint(v * peak).astype(np.int32)


def tile_planes(comps: Sequence[np.ndarray], plan: TilePlan, precisions, signed,
                mct: int, reversible: bool, code_values=None) -> list[np.ndarray]:
    """Level-shifted (and colour-transformed) planes of the tile's components:
    int32 when reversible, else float32.  ``code_values``: (scale, peak), the samples
    coded as their code values (:func:`code_value_samples`, before the G.1.2 shift)."""
    dtype = np.int32 if reversible else np.float32
    planes = []
    for tc, a in zip(plan.components, comps):
        x = a[tc.y0:tc.y1, tc.x0:tc.x1]
        if code_values is not None:
            x = code_value_samples(x, code_values)
        x = np.asarray(x, dtype=np.int32 if reversible else np.float32)
        if not signed[tc.c]:
            x = x - dtype(1 << (precisions[tc.c] - 1))  # G.1.2 DC level shift
        planes.append(x)
    if mct:
        fwd = forward_rct if reversible else forward_ict
        planes[:3] = [np.asarray(p, dtype) for p in fwd(*planes[:3])]
    return planes


def quantize_band(coeffs: np.ndarray, delta: float, reversible: bool) -> np.ndarray:
    """Quantisation indices of one band, int32 (E.1: q = sign(c) floor(|c| / Delta_b));
    reversible bands are their integer coefficients."""
    if reversible:
        return np.asarray(coeffs, np.int32)
    c = np.asarray(coeffs, np.float32)
    q = np.floor(np.abs(c) * np.float32(1.0 / delta))
    return np.copysign(q, c).astype(np.int32)


def place_bands(flat: np.ndarray, tc, ll, levels) -> None:
    """Copy the bands of one tile-component (from fdwt_*) into ``flat`` at the plan's offsets."""
    for res in tc.resolutions:
        arrays = (ll,) if res.r == 0 else levels[res.r - 1][:3]
        for band, arr in zip(res.bands, arrays):
            if arr.shape != (band.height, band.width):
                raise AssertionError(f"band shape {arr.shape} != plan {(band.height, band.width)}")
            flat[band.offset:band.offset + arr.size] = arr.ravel()


def forward_tile(comps: Sequence[np.ndarray], plan: TilePlan, precisions, signed, mct: int,
                 reversible: bool, code_values=None) -> np.ndarray:
    """The tile's quantisation indices as one flat int32 buffer (plan layout);
    ``code_values`` as :func:`tile_planes`."""
    flat = np.zeros(plan.coeff_size, np.int32)
    planes = tile_planes(comps, plan, precisions, signed, mct, reversible, code_values)
    fdwt = fdwt_53 if reversible else fdwt_97
    for tc, x in zip(plan.components, planes):
        ll, levels = fdwt(x, tc.levels, (tc.x0, tc.y0))
        ll = quantize_band(ll, tc.resolutions[0].bands[0].delta, reversible)
        qlevels = []
        for (hl, lh, hh, rect), res in zip(levels, tc.resolutions[1:]):
            qlevels.append(tuple(quantize_band(a, b.delta, reversible)
                                 for a, b in zip((hl, lh, hh), res.bands)))
        place_bands(flat, tc, ll, qlevels)
    return flat
