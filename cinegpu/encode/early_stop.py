"""Early stop of tier-1 coding: bit-planes that rate control would drop are not coded.

Under a byte budget (DCI: 1,302,083 bytes a frame at 24 fps), PCRD-opt (:mod:`.rate`) keeps
the passes of the top few magnitude bit-planes and drops the rest, yet coding every plane costs
tier-1 most of its time: the low planes hold most of the symbols.  This is the seed paper's
"stop before coding what the budget drops" (its PSB and BPI methods), decided from the frame
itself, so that a frame's bytes never depend on the frames coded before it or on the thread
that coded it:

1. :func:`magnitude_histogram`: how many quantisation indices have each bit length
   (T.800 D.2: a sample becomes significant in the bit-plane of its leading one); the
   encoder counts them per component (:func:`component_histograms`).
2. :func:`first_floor`: the floor F, the lowest magnitude bit-plane to code, from a
   conservative estimate of the bytes of each plane (:func:`plane_bytes`): one plane below
   the one where the estimate meets the budget.  Under per-component caps (DCI) the
   estimate is made per component (:func:`component_histograms`) and a component counts
   only up to its cap: when one is held to it, the others fill the budget from lower planes.
3. Tier-1 codes every block only down to plane F
   (:func:`cinegpu.encode.tier1.codeblock.coded_passes`): the passes it codes are the
   passes of the full coding, with the same distortions (measured on the whole
   magnitudes) and bytes, but for the termination of the last one.  Nothing in the
   codestream changes but which passes exist for rate control to choose from.
4. :func:`floor_share`: after rate control, the share of the kept body bytes that came
   from plane F.  Above :data:`FLOOR_SHARE` the floor may have cut passes that rate control
   wanted, and the encoder codes the frame again one plane lower.  When rate control ends
   under the budget with a component that is not at its cap holding every pass it could
   take (the writer's "starved"), the floor surely cut them: the frame is coded again from
   every plane.

(Dropping the planes by a coarser quantisation step instead would code the same passes, but
their distortions would be measured against the coarser indices; on content near the
budget that misled rate control by up to 7 dB.)

The GPU histogram is ``bit_length_histogram`` of ``cuda/forward.cu`` (shared-memory counts);
its CPU twin (numba) counts the same.
"""

import numpy as np
from numba import njit

__all__ = [
    "FLOOR_SHARE",
    "component_histograms",
    "first_floor",
    "floor_share",
    "magnitude_histogram",
    "plane_bytes",
]

#: Bit lengths counted: indices are int32 (|v| < 2^31).
BITS = 32
#: Code the frame again one plane lower when more than this share of its kept body bytes
#: came from the lowest coded plane.
FLOOR_SHARE = 0.01
#: The floor's estimate must reach this share of the budget one plane above it (the
#: estimate of :func:`plane_bytes` is below the coded bytes on every content measured:
#: 1.0 to 1.9 times, so a share under 1 still leaves a spare plane in practice).
BUDGET_SHARE = 0.8
#: Bits per refinement and per newly significant sample in :func:`plane_bytes`.
REFINE_BITS, NEW_BITS = 1.0, 3.0


#: Bit length of each 16-bit value (read-only; numba takes it as a constant).
_BIT_LENGTH16 = np.array([v.bit_length() for v in range(1 << 16)], np.uint8)
_BIT_LENGTH16.setflags(write=False)


@njit(cache=True, nogil=True)
def _histogram(flat, out):
    """Add the bit length counts of int32 ``flat`` to out[0..32]: each magnitude's length from
    a 16-bit table (its high half's plus 16 above 2^16), counted in four interleaved
    histograms so that consecutive indices do not wait on one count."""
    h = np.zeros((4, BITS + 1), np.int64)
    n = flat.shape[0]
    for i in range(n):
        m = np.int64(flat[i])        # |INT_MIN| = 2^31 has bit length 32, as on the GPU
        m = -m if m < 0 else m
        b = _BIT_LENGTH16[m] if m < 65536 else _BIT_LENGTH16[m >> 16] + 16
        h[i & 3, b] += 1
    for j in range(4):
        for b in range(BITS + 1):
            out[b] += h[j, b]


def on_device(a) -> bool:
    """Whether ``a`` is a CuPy array (without importing CuPy)."""
    return type(a).__module__.startswith("cupy")


def magnitude_histogram(flats) -> np.ndarray:
    """int64[33]: entry n counts the indices of all ``flats`` (int32, numpy or CuPy) whose
    magnitude has bit length n (0 for a zero index)."""
    out = np.zeros(BITS + 1, np.int64)
    for flat in flats:
        if on_device(flat):     # counted in shared memory by blocks (forward.cu)
            import cupy  # noqa: PLC0415  (optional: CuPy)
            counts = cupy.zeros(BITS + 1, cupy.uint64)
            _count_on_device(flat, counts)
            out += counts.get().astype(np.int64)
        else:
            _histogram(np.ascontiguousarray(flat, np.int32), out)
    return out


def _count_on_device(flat, counts) -> None:
    """Add the bit length counts of the CuPy int32 ``flat`` to ``counts`` (CuPy uint64[33])
    on the current stream: ``bit_length_histogram`` of forward.cu."""
    import cupy  # noqa: PLC0415  (optional: CuPy)

    from .gpu import THREADS, kernel  # noqa: PLC0415  (optional: CuPy, which encode.gpu imports)
    if flat.size:
        blocks = max(1, min(-(-flat.size // THREADS), 1024))
        kernel("bit_length_histogram")((blocks,), (THREADS,),
                                       (cupy.ascontiguousarray(flat, cupy.int32),
                                        np.int64(flat.size), counts))


def component_ranges(plan) -> list[tuple[int, int, int]]:
    """(component, first, after) of each tile-component's indices in the tile's flat buffer
    (the plan's layout puts a tile-component's bands together)."""
    out = []
    for tc in plan.components:
        bands = [b for res in tc.resolutions for b in res.bands if b.width * b.height]
        if bands:
            out.append((tc.c, min(b.offset for b in bands),
                        max(b.offset + b.width * b.height for b in bands)))
    return out


def component_histograms(plans, flats, ncomp: int) -> np.ndarray:
    """int64[ncomp, 33]: :func:`magnitude_histogram` of each component's indices over the
    tiles (``plans`` and their ``flats``, numpy or CuPy; on the GPU one wait for all)."""
    if any(on_device(f) for f in flats):
        import cupy  # noqa: PLC0415  (optional: CuPy)
        counts = cupy.zeros((ncomp, BITS + 1), cupy.uint64)
        for plan, flat in zip(plans, flats):
            for c, a, z in component_ranges(plan):
                _count_on_device(flat[a:z], counts[c])
        return counts.get().astype(np.int64)
    out = np.zeros((ncomp, BITS + 1), np.int64)
    for plan, flat in zip(plans, flats):
        for c, a, z in component_ranges(plan):
            _histogram(np.ascontiguousarray(flat[a:z], np.int32), out[c])
    return out


def plane_bytes(hist: np.ndarray) -> np.ndarray:
    """float64[32]: estimated coded bytes of each magnitude bit-plane p (0 = least
    significant): REFINE_BITS for every index already significant above p (its magnitude
    refinement bit, D.3.3) and NEW_BITS for every index that becomes significant in p (its
    significance and sign decisions and the zero coding around it, D.3.1, D.3.2, D.3.4)."""
    h = np.asarray(hist, np.float64)
    above = np.concatenate((np.cumsum(h[::-1])[::-1], [0.0]))   # above[n]: bit length >= n
    p = np.arange(BITS)
    return (REFINE_BITS * above[p + 2] + NEW_BITS * h[p + 1]) / 8.0


def first_floor(hist: np.ndarray, budget: float, max_floor: int, caps=None) -> int:
    """The lowest bit-plane to code: the largest F <= ``max_floor`` whose planes above F are
    estimated (:func:`plane_bytes`) at BUDGET_SHARE x ``budget`` bytes or more, so plane F
    is coded as a spare; 0 when every plane fits.

    ``hist``: int64[33], or [ncomp, 33] per component (:func:`component_histograms`) with
    ``caps`` (bytes per component, DCI) or None.  A component counts for at most
    BUDGET_SHARE x its cap: where one is held to its cap, the others must bring the rest of
    the budget, from planes as low as they need (one floor for all)."""
    h = np.atleast_2d(np.asarray(hist, np.int64))
    above = _above(plane_bytes(h.sum(axis=0)))                  # above[p]: planes >= p
    each = np.array([_above(plane_bytes(row)) for row in h])   # the same per component
    lim = None if caps is None else BUDGET_SHARE * np.broadcast_to(
        np.asarray(caps, np.float64), (h.shape[0],))

    def reach(f: int) -> float:
        if lim is None or (each[:, f + 1] <= lim).all():
            return above[f + 1]
        return float(np.minimum(each[:, f + 1], lim).sum())
    ok = [f for f in range(1, max(0, int(max_floor)) + 1)
          if reach(f) >= BUDGET_SHARE * float(budget)]
    return max(ok, default=0)


def _above(est: np.ndarray) -> np.ndarray:
    """float64[33]: entry p sums the estimates of planes p and above (0 past the top)."""
    return np.concatenate((np.cumsum(est[::-1])[::-1], [0.0]))


def floor_share(rates: np.ndarray, rate_off: np.ndarray, num_bps: np.ndarray,
                passes: np.ndarray, floor: int) -> float:
    """Share of the kept body bytes that came from bit-plane ``floor`` (the lowest coded):
    block i with K = ``num_bps[i]`` codes it in its passes 3 (K - floor) - 5 .. 3 (K - floor)
    - 3 (only pass 0 when K = floor + 1), D.3, and keeps its first ``passes[i]``; ``rates``
    are cumulative bytes after each pass (the :class:`~cinegpu.encode.blocks.BlockTable`
    layout)."""
    k = np.asarray(num_bps, np.int64) - int(floor)
    n = np.asarray(passes, np.int64)
    kept_mask = n > 0
    if not kept_mask.any():
        return 0.0
    k, n, off = k[kept_mask], n[kept_mask], np.asarray(rate_off, np.int64)[:-1][kept_mask]
    total = rates[off + n - 1].astype(np.float64)
    first = np.maximum(3 * k - 5, 0)            # the first pass of plane 0
    reached = n > first
    before = np.where(first > 0, rates[off + np.maximum(first - 1, 0)], 0).astype(np.float64)
    low = np.where(reached, total - before, 0.0)
    body = total.sum()
    return float(low.sum() / body) if body > 0 else 0.0
