"""Where a tile-component's subbands lie in the flat coefficient buffer, as arrays.

The decoder's tier-1 writes every subband of a tile into one flat int32 buffer
(:mod:`cinegpu.decode.plan`, ``Band.offset``).  A :class:`FlatLayout` says, for one
tile-component at its decoded resolutions, where each band lies (offset, rows,
columns), the rectangle of each decomposition level (T.800 F.3.2, coarsest first) and
the step sizes (E.1), once per plan: the fused entry points ``dequantize_idwt_flat`` and
``reconstruct_mct_flat`` of every back end take it with the buffer, so a frame costs no
Python object per band or level (the numba back end runs a whole tile-component in one
call).  The shapes are checked against the level rectangles here, once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dwt import _band_sizes
from .level_shift import sample_bounds

__all__ = ["FlatLayout"]


@dataclass(frozen=True, eq=False)
class FlatLayout:
    """Bands of one tile-component in a flat buffer: LL, then HL, LH, HH of each level.

    ``bands``: int64 (1 + 3 * levels, 3) rows (offset, height, width); ``rects``: int64
    (levels, 4) rows (u0, v0, u1, v1) of each level's output, coarsest first; ``deltas``:
    Δb of every band in the order of ``bands`` (T.800 E.1); ``dq97``: float32 (levels, 4)
    and ``q53``: int32 (levels, 4), the per-level dequantisation arguments of the numba
    kernels (:mod:`.dwt_numba`: Δb / 2 of each band, 1.0 for the LL of a level above the
    first; 1 to halve a band still holding tier-1 output).
    """

    bands: np.ndarray
    rects: np.ndarray
    deltas: tuple[float, ...]
    dq97: np.ndarray
    q53: np.ndarray

    @property
    def levels(self) -> int:
        return self.rects.shape[0]

    @property
    def size(self) -> tuple[int, int]:
        """(rows, columns) of the reconstructed tile-component."""
        if self.levels:
            u0, v0, u1, v1 = (int(v) for v in self.rects[-1])
            return v1 - v0, u1 - u0
        return int(self.bands[0, 1]), int(self.bands[0, 2])

    @classmethod
    def build(cls, bands, rects, deltas) -> FlatLayout:
        """From ``bands`` [(offset, height, width)], ``rects`` [(u0, v0, u1, v1)] and ``deltas``;
        raises ValueError where a band's shape does not fit its level (F.3.3)."""
        b = np.array(bands, np.int64).reshape(-1, 3)
        r = np.array(rects, np.int64).reshape(-1, 4)
        if b.shape[0] != 1 + 3 * r.shape[0] or len(deltas) != b.shape[0]:
            raise ValueError(f"{b.shape[0]} bands and {len(deltas)} step sizes for {r.shape[0]} levels")
        ll = (int(b[0, 1]), int(b[0, 2]))
        for j, (u0, v0, u1, v1) in enumerate(r.tolist()):
            (nl, nh), (ml, mh) = _band_sizes(u0, u1), _band_sizes(v0, v1)
            got = [ll] + [(int(h), int(w)) for _, h, w in b[1 + 3 * j : 4 + 3 * j]]
            if got != [(ml, nl), (ml, nh), (mh, nl), (mh, nh)]:
                raise ValueError(f"bands {got} do not fit level {(u0, v0, u1, v1)} (T.800 F.3.3)")
            ll = (v1 - v0, u1 - u0)
        dq = [[np.float32(deltas[0] / 2.0) if j == 0 else np.float32(1.0)]
              + [np.float32(d / 2.0) for d in deltas[1 + 3 * j : 4 + 3 * j]] for j in range(r.shape[0])]
        q = [[int(j == 0), 1, 1, 1] for j in range(r.shape[0])]
        return cls(b, r, tuple(float(d) for d in deltas), np.array(dq, np.float32).reshape(-1, 4),
                   np.array(q, np.int32).reshape(-1, 4))

    def args(self, coeffs):
        """``(ll, levels, deltas)`` of ``dequantize_idwt``: 2-D views of ``coeffs`` (numpy or CuPy)."""
        views = [coeffs[o : o + h * w].reshape(h, w) for o, h, w in self.bands.tolist()]
        levels = [(*views[1 + 3 * j : 4 + 3 * j], tuple(int(v) for v in rect)) for j, rect in enumerate(self.rects)]
        return views[0], levels, list(self.deltas)


#: columns of :attr:`FlatLayoutBatch.meta`
BATCH_BAND0, BATCH_RECT0, BATCH_LEVELS, BATCH_REVERSIBLE, BATCH_SHIFT, BATCH_LO, BATCH_HI, BATCH_OUT, \
    BATCH_ROWS, BATCH_COLS = range(10)


@dataclass(frozen=True, eq=False)
class FlatLayoutBatch:
    """Several tile-components' :class:`FlatLayout` tables stacked, with their sample bounds,
    so a back end can reconstruct them all in one compiled call (a tile of hundreds of small
    components pays one call, not hundreds).  Built once per plan.

    ``items``: (component, layout, reversible, precision, signed) of each, in order;
    ``bands``, ``rects``, ``dq97``, ``q53``: the layouts' arrays one after another; ``meta``:
    int64 (n, 10) rows (first band row, first rect row, levels, reversible, DC shift, low and
    high clip bound (T.800 G.1.2), offset in the output buffer, rows, columns); ``samples``:
    the output buffer's length."""

    items: tuple
    bands: np.ndarray
    rects: np.ndarray
    dq97: np.ndarray
    q53: np.ndarray
    meta: np.ndarray
    samples: int

    @classmethod
    def build(cls, items) -> FlatLayoutBatch:
        """From ``items`` [(component, layout, reversible, precision, signed)], each layout with
        one level or more and each precision of 1..24 bits."""

        meta, bands, rects, dq, q = [], [], [], [], []
        b0 = r0 = out = 0
        for c, lay, rev, precision, signed in items:
            if not lay.levels or not 1 <= precision <= 24:
                raise ValueError("a batched tile-component needs one level or more and 1..24 bits")
            shift, lo, hi = sample_bounds(precision, signed)
            h, w = lay.size
            meta.append((b0, r0, lay.levels, int(bool(rev)), shift, lo, hi, out, h, w))
            bands.append(lay.bands)
            rects.append(lay.rects)
            dq.append(lay.dq97)
            q.append(lay.q53)
            b0 += lay.bands.shape[0]
            r0 += lay.levels
            out += h * w

        def cat(xs, shape, dt):
            return np.ascontiguousarray(np.concatenate(xs), dt) if xs else np.zeros(shape, dt)

        return cls(tuple(items), cat(bands, (0, 3), np.int64), cat(rects, (0, 4), np.int64),
                   cat(dq, (0, 4), np.float32), cat(q, (0, 4), np.int32),
                   np.array(meta, np.int64).reshape(-1, 10), out)


#: columns of :attr:`FrameLayout.items`
FRAME_BAND0, FRAME_RECT0, FRAME_LEVELS, FRAME_REVERSIBLE, FRAME_SHIFT, FRAME_LO, FRAME_HI, FRAME_DST, \
    FRAME_STRIDE, FRAME_ROWS, FRAME_COLS, FRAME_MCT = range(12)
FRAME_COLUMNS = 12


@dataclass(frozen=True, eq=False)
class FrameLayout:
    """Every tile-component of a frame as rows of plain arrays, and where each one's samples go
    in the frame's component planes, so a back end can reconstruct the frame in one compiled
    call (:func:`.frame_numba.frame_samples`).  Built once per frame geometry (the decoder's
    plans of its tiles) by :func:`cinegpu.decode.reconstruct.frame_layout`.

    ``bands``, ``rects``, ``dq97``, ``q53``: the tile-components' :class:`FlatLayout` arrays
    one after another, band offsets counted from the start of the frame's coefficient buffer;
    ``dq0``: float32 Δb / 2 of each row's LL band (T.800 E.1; used where it has no level);
    ``items``: int64 (n, FRAME_COLUMNS) rows (first band row, first rect row, levels,
    reversible, DC shift, low and high clip bound (G.1.2), first sample in the planes buffer,
    samples between its rows, rows, columns, 1 on component 0 of a tile under the MCT, whose
    components 1 and 2 are the next two rows); ``samples``: the planes buffer's length (int32
    samples); ``planes``: (offset, rows, columns) of each component's plane in it;
    ``groups``: (dtype, first, end, components) of the runs of planes returned as one dtype
    (each run's planes are consecutive in the buffer).
    """

    bands: np.ndarray
    rects: np.ndarray
    dq97: np.ndarray
    q53: np.ndarray
    dq0: np.ndarray
    items: np.ndarray
    samples: int
    planes: tuple
    groups: tuple

    def split(self, out: np.ndarray) -> list:
        """The component arrays (each of its group's dtype) of the filled planes buffer ``out``:
        one conversion per group, then views (one reshape where a group's planes share a size)."""
        result: list = [None] * len(self.planes)
        for dtype, first, end, comps in self.groups:
            run = out[first:end] if dtype == np.int32 else out[first:end].astype(dtype)
            shapes = {self.planes[c][1:] for c in comps}
            if len(shapes) == 1:
                h, w = shapes.pop()
                for c, view in zip(comps, run.reshape(len(comps), h, w)):
                    result[c] = view
            else:
                for c in comps:
                    o, h, w = self.planes[c]
                    result[c] = run[o - first : o - first + h * w].reshape(h, w)
        return result
