"""Quantisation step sizes (T.800 E.1) and the weights rate control needs.

Step sizes: irreversible bands get Delta_b = base / ||synthesis basis of b||,
so every band adds the same quantisation noise to the image; the pair
(epsilon_b, mu_b) of E-3, Delta_b = 2^(R_b - epsilon_b) (1 + mu_b / 2^11),
is the nearest one a QCD can carry.  Reversible bands are not quantised
(E.1.2: Delta_b = 1), and epsilon_b is the band's nominal dynamic range
R_b (plus one for components 1 and 2 under the RCT, whose differences need a
bit more).

Weights: the squared L2 norms of the synthesis basis functions, found by
running the decoder's own inverse DWT on an impulse, and of the inverse
component transform's columns (G.2, G.3), turn a code-block's distortion in
quantisation-index units into squared error in sample units.
"""

from __future__ import annotations

import functools
import math
import threading

import numpy as np

from cinegpu.decode.transform import fdwt_53, fdwt_97, idwt_53, idwt_97

__all__ = [
    "LOG2_GAIN",
    "band_index",
    "block_components",
    "block_weights",
    "mct_weights",
    "step_pair",
    "steps_for",
    "synthesis_norm",
]

#: log2 of the band gain of Table E.1 by orientation LL, HL, LH, HH.
LOG2_GAIN = (0, 1, 1, 2)

#: Squared norms of the inverse ICT's columns (G-8): (1,1,1), (0,-0.34413,1.772),
#: (1.402,-0.71414,0).
ICT_WEIGHTS = (3.0, 0.34413 ** 2 + 1.772 ** 2, 1.402 ** 2 + 0.71414 ** 2)
#: Squared norms of the inverse RCT's columns (G-6, without the floor).
RCT_WEIGHTS = (3.0, 0.6875, 0.6875)


def band_index(r: int, orient: int) -> int:
    """Position of band (resolution r, orientation) in the QCD list (Table A.30)."""
    return 0 if r == 0 else 3 * (r - 1) + orient


#: One thread computes a norm while the others wait for it (mastering starts 16 encoders at
#: once, and a level-6 norm takes a large inverse DWT).
_NORMS_LOCK = threading.Lock()


def synthesis_norm(nb: int, orient: int, reversible: bool) -> float:
    """L2 norm of the synthesis basis function of a band at decomposition level ``nb``
    (1 = finest) and orientation ``orient``, in the transform the decoder inverts
    (9/7 with the F.4.8.2 scaling, or 5/3).  The LL band is the one at level nb.
    Computed once per process (cached)."""
    with _NORMS_LOCK:
        return _synthesis_norm(int(nb), int(orient), bool(reversible))


@functools.lru_cache(maxsize=None)
def _synthesis_norm(nb: int, orient: int, reversible: bool) -> float:
    if nb == 0:
        return 1.0
    size = (1 << nb) * 24
    fdwt, idwt = (fdwt_53, idwt_53) if reversible else (fdwt_97, idwt_97)
    ll, levels = fdwt(np.zeros((size, size), np.int32 if reversible else np.float32), nb)
    amp = 1 << 16 if reversible else 1.0
    ll = ll * 0
    levels = [(hl * 0, lh * 0, hh * 0, rect) for hl, lh, hh, rect in levels]
    if orient == 0:
        target = ll
    else:
        target = levels[0][orient - 1]  # the coarsest level is level nb
    target[target.shape[0] // 2, target.shape[1] // 2] = amp
    out = np.asarray(idwt(ll, levels), np.float64) / amp
    return float(np.sqrt((out * out).sum()))


def mct_weights(mct: bool, reversible: bool, ncomp: int) -> list[float]:
    """Squared norm of each component's inverse colour transform column (1 without MCT)."""
    w = [1.0] * ncomp
    if mct and ncomp >= 3:
        w[:3] = RCT_WEIGHTS if reversible else ICT_WEIGHTS
    return w


def step_pair(delta: float, Rb: int) -> tuple[int, int]:
    """(epsilon_b, mu_b) whose E-3 step size is nearest ``delta`` (E.1.1.1)."""
    e = math.floor(math.log2(delta))
    mu = round((delta / 2.0 ** e - 1.0) * 2048)
    if mu >= 2048:
        e, mu = e + 1, 0
    eps = Rb - e
    if not 0 <= eps <= 31:
        raise ValueError(f"step size {delta} not expressible for R_b = {Rb} (epsilon {eps})")
    return eps, int(mu)


def steps_for(levels: int, precision: int, reversible: bool, *, mct: bool = False,
              base: float = 1.0, derived: bool = False, max_b: int | None = None,
              guard_bits: int = 2) -> list[tuple[int, int]]:
    """The QCD list of (epsilon_b, mu_b), LL first (Table A.30).

    ``precision``: the component precision the step sizes are written for
    (R_b = precision + log2 gain_b).  ``base``: irreversible step in sample units
    before the 1 / norm weighting.  ``derived``: only the LL pair is meaningful
    (E-5 derives the others from it).  ``max_b``: irreversible (expounded) only, the most
    HTJ2K parameter B the steps may need with ``guard_bits`` (T.814 A.3, counted as
    :func:`cinegpu.decode.codestream.imf.ht_magb_b`): a band whose step is finer gets
    epsilon_b = max_b - G + n_b and mu_b = 0, the finest step that keeps to it (IMF HTJ2K,
    ST 2067-21:2023 Annex I).  Worked out once per set of arguments (every frame's header
    and rate control ask again).
    """
    return list(_steps_for(int(levels), int(precision), bool(reversible), bool(mct),
                           float(base), bool(derived), max_b, int(guard_bits)))


@functools.lru_cache(maxsize=256)
def _steps_for(levels, precision, reversible, mct, base, derived, max_b, guard_bits):
    out = []
    for r in range(levels + 1):
        for orient in ((0,) if r == 0 else (1, 2, 3)):
            Rb = precision + LOG2_GAIN[orient]
            if reversible:
                out.append((Rb + (1 if mct else 0), 0))
                continue
            nb = levels if r == 0 else levels - r + 1
            if derived:
                # E-5: epsilon_b = epsilon_0 - NL + n_b with the LL mantissa
                eps0, mu0 = out[0] if out else step_pair(base / synthesis_norm(nb, 0, False), Rb)
                out.append((eps0 - levels + nb, mu0))
                continue
            eps, mu = step_pair(base / synthesis_norm(nb, orient, False), Rb)
            if max_b is not None and eps > max_b - guard_bits + nb:
                eps, mu = max_b - guard_bits + nb, 0
            out.append((eps, mu))
    return tuple(out)


def block_components(plan) -> np.ndarray:
    """Component index of each code-block row of ``plan.cb`` (rows are laid out per
    tile-component, resolution and precinct, so each component owns contiguous runs)."""
    out = np.zeros(plan.cb.shape[0], np.int64)
    for tc in plan.components:
        for res in tc.resolutions:
            n = res.npx * res.npy
            if n == 0:
                continue
            p0, p1 = res.prec_first, res.prec_first + n
            pb0 = plan.prec_pb[p0, 0]
            pb1 = plan.prec_pb[p1 - 1, 0] + plan.prec_pb[p1 - 1, 1]
            rows = plan.pb[pb0:pb1]
            if rows.shape[0] == 0:
                continue
            first = rows[:, 2].min()
            last = (rows[:, 2] + rows[:, 0] * rows[:, 1]).max()
            out[first:last] = tc.c
    return out


def block_weights(plan, params) -> np.ndarray:
    """Per block (Delta_b ||basis_b||)^2 x MCT column weight: index-unit distortion ->
    squared error in sample units."""
    w = np.zeros(plan.cb.shape[0])
    mw = mct_weights(bool(params.mct), params.reversible, params.ncomp)
    offs, vals = [], []
    for tc in plan.components:
        for res in tc.resolutions:
            for b in res.bands:
                nb = tc.levels if res.r == 0 else tc.levels - res.r + 1
                norm = synthesis_norm(nb, b.orient, params.reversible)
                offs.append(b.offset)
                vals.append((b.delta * norm) ** 2 * mw[tc.c])
    offs = np.array(offs)
    vals = np.array(vals)
    idx = np.searchsorted(offs, plan.cb[:, 7], side="right") - 1
    w[:] = vals[idx]
    return w
