"""Reconstruction of a tile: dequantise, inverse DWT, inverse MCT, DC shift.

The numpy path (:mod:`cinegpu.decode.transform`); a CuPy back end with the
same signatures lives in ``transform.cuda_backend``. Input is the flat
coefficient buffer from :mod:`cinegpu.decode.tile`; output one int32 array
per component at the decoded resolution (T.800 Annexes E, F, G).
"""

from __future__ import annotations

import numpy as np

from .plan import TileComponent, TilePlan


def _band(xp, coeffs, band, tf, reversible):
    a = coeffs[band.offset : band.offset + band.width * band.height].reshape(band.height, band.width)
    return tf.dequantize(a, band.delta, reversible)


def tile_component(tc: TileComponent, coeffs, tf, xp=np):
    """Inverse DWT of one tile-component up to its last decoded resolution."""
    res = tc.resolutions[: tc.decoded]
    ll = _band(xp, coeffs, res[0].bands[0], tf, tc.reversible)
    levels = [(*(_band(xp, coeffs, b, tf, tc.reversible) for b in r.bands), r.rect) for r in res[1:]]
    idwt = tf.idwt_53 if tc.reversible else tf.idwt_97
    return idwt(ll, levels)


def reconstruct_tile(plan: TilePlan, coeffs, siz, tf, xp=np, components=None) -> list:
    """Samples of the tile's components (clipped ints, DC shift applied).

    ``components``: the indices wanted (None: all); others come back as None.
    The inverse MCT needs components 0-2 and is skipped when one of them is
    not wanted (as ``opj_decompress -c`` does).
    """
    wanted = set(range(len(plan.components)) if components is None else components)
    planes = [tile_component(tc, coeffs, tf, xp) if tc.c in wanted else None for tc in plan.components]
    if plan.mct and len(planes) >= 3 and {0, 1, 2} <= wanted:
        if not (planes[0].shape == planes[1].shape == planes[2].shape):
            from .errors import InvalidSegment

            raise InvalidSegment("multiple component transform over components of different sizes")
        rev = plan.components[0].reversible
        if rev != plan.components[1].reversible or rev != plan.components[2].reversible:
            from .errors import InvalidSegment

            raise InvalidSegment("multiple component transform mixes 5/3 and 9/7 components")
        inverse = tf.inverse_rct if rev else tf.inverse_ict
        planes[0], planes[1], planes[2] = inverse(planes[0], planes[1], planes[2])
    return [None if p is None else tf.to_samples(p, siz.precision(c), siz.signed(c))
            for c, p in enumerate(planes)]
