"""HTJ2K frames (ITU-T T.814 | ISO/IEC 15444-15): the HT path of :class:`.Encoder` and JPH.

``EncoderSettings(codec="htj2k")`` codes every code-block with one HT set holding only its cleanup
pass (:mod:`.tier1.ht`); the codestream is the Part-1 one with COD's code-block style bit
0x40, Rsiz bit 14 and a CAP marker (:func:`.markers.cap_ht`); tier-2 writes one pass per
included block (T.814 B.3: a lone cleanup's length takes Lblock bits, as a Part-1 pass).

Rate:

* no budget: every block at bit-plane 0, so the reversible path (5/3 + RCT) is lossless and
  the irreversible one (9/7 + ICT) is set by its quantisation step (``base_step``);
* a byte budget: each block's cleanup is coded at a plane d_b >= 0 (its d_b lowest
  magnitude planes dropped), chosen as PCRD-opt would over one "pass" per plane: per block
  and per d, the squared error of the indices at the decoder's midpoint reconstruction,
  weighted by the block's synthesis weight (the same :func:`.quant.block_weights` the Part-1
  rate control uses), and an estimate of its bytes (:func:`.tier1.ht.ht_plane_figures`);
  each block takes the d minimising weighted error + lambda x bits, lambda the smallest
  for which the estimated bytes meet the target (:class:`.ht_select.PlaneChoice`, exact
  over the blocks' hull slopes, made once a frame).  The frame is then coded and written;
  the estimate's bias is removed from what was measured: the target is scaled until one
  round fits and one does not, then interpolated between the two (a few rounds, keeping
  the largest stream that fits).  The first round aims at AIM of the budget in estimated
  bits (the packet headers come on top of the segments); a round whose planes would be the
  last round's ends the loop (a frame that fits whole takes one round).  A block's segment
  depends only on its coefficients and its plane, so a round after the first codes only the
  blocks whose plane changed (:class:`_Segments`); the stream is the one coding every block
  each round would give.

On the ``cuda`` back end the coefficients stay on the GPU and the cleanup passes are coded there
(:func:`.tier1.ht_gpu.ht_encode_rows_cuda`, the same bytes as :func:`.tier1.ht.ht_encode_rows`);
under a budget the per-plane figures are worked out there too
(:func:`.tier1.ht_gpu.ht_plane_figures_cuda`, exact integer sums as in ht_plane_figures, so
the same float64 figures and the same codestream) and stay there: the planes are chosen on
the GPU (:class:`.ht_select_gpu.PlaneChoiceCuda`, the same choice as PlaneChoice), and only
they come back to the host.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .blocks import BlockTable
from .ht_select import PlaneChoice
from .quant import block_components, block_weights
from .tier1.ht import ht_encode_rows, ht_plane_figures

__all__ = ["DMAX", "encode_ht_frame", "jph_file"]

#: The most low bit-planes rate control may drop from a block (at most FIGURES_DMAX).
DMAX = 20
#: Coding rounds under a budget, and the fill (share of the budget) that ends them early.
ROUNDS = 6
FILL = 0.985
#: The first round's target, a share of the budget in estimated bits: on three 4K test frames
#: at 50-800 Mbit/s its stream landed at 0.983-1.021 of the budget; 7 of the 12 cases ended
#: in that round, the others in the second.
AIM = 0.94
#: the tile plans whose tables (:class:`_PlanTables`) an encoder keeps
BLOCK_SETS = 32


class _PlanTables:
    """What an encoder keeps of one tile plan between frames (a sequence's frames share their
    geometry): each block's component and, per set of quantisation options, its weight
    (:func:`.quant.block_weights`), and on the GPU the :class:`.tier1.ht_gpu.BlockSet` of all
    its blocks, whose device tables the coding and the figures kernels read."""

    def __init__(self, plan):
        self.plan = plan
        self.components = block_components(plan)
        self._weights: dict = {}
        self._device_weights: dict = {}
        self._block_set = None

    def weights(self, params) -> np.ndarray:
        key = (bool(params.mct), bool(params.reversible), int(params.ncomp))
        w = self._weights.get(key)
        if w is None:
            w = self._weights[key] = block_weights(self.plan, params)
        return w

    def device_weights(self, params):
        """:meth:`weights` on the current CUDA device (CuPy float64), uploaded once: an
        upload from pageable memory waits for the stream's work before it."""
        import cupy  # noqa: PLC0415
        key = (bool(params.mct), bool(params.reversible), int(params.ncomp),
               cupy.cuda.runtime.getDevice())
        w = self._device_weights.get(key)
        if w is None:
            w = self._device_weights[key] = cupy.asarray(self.weights(params), cupy.float64)
        return w

    def block_set(self, kernel: str):
        """The plan's BlockSet for ``kernel`` (all its blocks), made on first use (CuPy)."""
        if self._block_set is None or self._block_set.kernel != kernel:
            from .tier1.ht_gpu import BlockSet  # noqa: PLC0415
            self._block_set = BlockSet(self.plan.cb, np.arange(self.plan.cb.shape[0],
                                                               dtype=np.int64), kernel)
        return self._block_set


def _plan_tables(plans, kept: dict | None) -> list[_PlanTables]:
    """The plans' :class:`_PlanTables`, from ``kept`` (the caller's dict, by plan; None:
    made for this frame alone)."""
    out = []
    for plan in plans:
        t = None if kept is None else kept.get(id(plan))
        if t is None or t.plan is not plan:
            t = _PlanTables(plan)
            if kept is not None:
                if len(kept) >= BLOCK_SETS:      # geometries come and go: start over
                    kept.clear()
                kept[id(plan)] = t
        out.append(t)
    return out


def _tile_rows(pool, flat, cb, rows, drops):
    """ht_encode_rows of the blocks cb[rows] (block rows[j] at plane drops[j]), runs of them
    on the pool's threads."""
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.ascontiguousarray(rows, np.int64)
    drops = np.ascontiguousarray(drops, np.int64)
    runs = None if pool is None else pool.runs(cb[rows])
    if runs is None:
        return ht_encode_rows(flat, cb, rows, drops)
    futures = [pool.submit(ht_encode_rows, flat, cb, rows[a:b], drops[a:b]) for a, b in runs]
    table, dists = BlockTable.join([f.result() for f in futures])
    return table.coded, table.coded_off, table.rates, table.rate_off, dists, table.num_bps


def _tile_figures(pool, flat, cb, blocks=None):
    """ht_plane_figures of every block of a tile (DMAX planes): (dist, bits), one row per
    block; numpy ``flat`` in runs of blocks on the pool's threads, CuPy ``flat`` on the GPU
    (the current stream), where they stay (CuPy arrays; ``blocks``: the tile's BlockSet of
    all its blocks, whose device tables the kernel then reads)."""
    cb = np.ascontiguousarray(cb, np.int64)
    if not isinstance(flat, np.ndarray):         # on the GPU (CuPy): worked out there
        from .tier1.ht_gpu import ht_plane_figures_cuda  # noqa: PLC0415
        return ht_plane_figures_cuda(flat, cb, np.arange(cb.shape[0], dtype=np.int64), DMAX,
                                     keep=True, blocks=blocks)
    runs = None if pool is None else pool.runs(cb)
    if runs is None:
        return ht_plane_figures(flat, cb, np.arange(cb.shape[0], dtype=np.int64), DMAX)
    parts = [f.result() for f in [pool.submit(ht_plane_figures, flat, cb,
                                              np.arange(a, b, dtype=np.int64), DMAX)
                                  for a, b in runs]]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _plane_choice(pool, plans, flats, params, tables=None, kernel="auto"):
    """The frame's :class:`.ht_select.PlaneChoice` from its blocks' figures, or on the GPU
    (CuPy flats) :class:`.ht_select_gpu.PlaneChoiceCuda`, the same choice made there.
    ``tables``: the plans' :class:`_PlanTables` (None: made here)."""
    tables = _plan_tables(plans, None) if tables is None else tables
    gpu = not isinstance(flats[0], np.ndarray)
    figs = [_tile_figures(pool, flat, plan.cb, t.block_set(kernel) if gpu else None)
            for plan, flat, t in zip(plans, flats, tables)]
    if not gpu:
        w = np.concatenate([t.weights(params) for t in tables])
        return PlaneChoice(w, np.concatenate([f[0] for f in figs]),
                           np.concatenate([f[1] for f in figs]))
    import cupy  # noqa: PLC0415

    from .ht_select_gpu import PlaneChoiceCuda  # noqa: PLC0415
    if len(figs) == 1:
        return PlaneChoiceCuda(tables[0].device_weights(params), *figs[0])
    return PlaneChoiceCuda(cupy.concatenate([t.device_weights(params) for t in tables]),
                           cupy.concatenate([f[0] for f in figs]),
                           cupy.concatenate([f[1] for f in figs]))


def _code_rows(plans, flats, rows, drops, pool, kernel="auto", tables=None, d_drops=None):
    """The cleanup segments of the frame's blocks ``rows`` (global indices, ascending; None:
    all) at the planes ``drops`` (one per frame block): (coded, coded_off), the segments
    joined in the order of ``rows``.  ValueError for a segment longer than Scup allows.
    ``tables``: the plans' :class:`_PlanTables` (None: made here), whose BlockSet codes
    every block of a tile on the GPU.  ``d_drops``: drops already on the GPU (CuPy), which
    the coding kernels read when every block is coded (``rows`` None)."""
    tables = _plan_tables(plans, None) if tables is None else tables
    coded, lens = [], []
    base = 0
    for plan, flat, t in zip(plans, flats, tables):
        n = plan.cb.shape[0]
        if rows is None:
            local = np.arange(n, dtype=np.int64)
        else:
            local = rows[(rows >= base) & (rows < base + n)] - base
        if local.size == 0:
            base += n
            continue
        if isinstance(flat, np.ndarray):
            out = _tile_rows(pool, flat, plan.cb, local, drops[base + local])
        else:                                    # on the GPU (CuPy): coded there
            from .tier1.ht_gpu import ht_encode_rows_cuda  # noqa: PLC0415
            whole = rows is None
            out = ht_encode_rows_cuda(flat, plan.cb, local, drops[base + local], kernel=kernel,
                                      blocks=t.block_set(kernel) if whole else None,
                                      d_drops=d_drops[base:base + n] if whole and
                                      d_drops is not None else None)
        if out[5].shape[0] != local.size:
            raise ValueError("an HT cleanup segment is longer than Scup allows (4079 bytes)")
        coded.append(out[0])
        lens.append(np.diff(out[1]))
        base += n
    lens = np.concatenate(lens) if lens else np.zeros(0, np.int64)
    off = np.zeros(lens.shape[0] + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    if len(coded) == 1:
        return coded[0], off
    return (np.concatenate(coded) if coded else np.zeros(0, np.uint8)), off


class _Segments:
    """Every block's cleanup segment of a frame as coded so far under a budget: ``coded``
    (uint8) and ``off`` (int64, blocks + 1) in block order, and ``drops``, the plane each
    block was coded at.  A block's segment depends only on its coefficients and its plane,
    so a later round codes only the blocks whose plane changed (:meth:`replaced`)."""

    def __init__(self, coded, off, drops):
        self.coded, self.off, self.drops = coded, off, drops

    def replaced(self, rows, coded, off, drops):
        """These segments with blocks ``rows`` (ascending) replaced by ``coded``/``off``
        (their segments in that order), now at planes drops[rows]."""
        new_drops = self.drops.copy()
        new_drops[rows] = drops[rows]
        joined, joined_off = _splice(self.coded, self.off, rows, coded, off)
        return _Segments(joined, joined_off, new_drops)

    def frame(self, frame_cls, params, cs, plans, layout):
        """The :class:`.encoder.Frame` of these segments: one pass per block with a segment
        (rate = its length, K = plane + 1, as :func:`.tier1.ht.ht_encode_rows` gives it);
        ``layout``: the plans' :func:`_block_layout`."""
        lens = np.diff(self.off)
        has = lens > 0
        rate_off = np.zeros(lens.shape[0] + 1, np.int64)
        np.cumsum(has, out=rate_off[1:])
        num_bps = np.where(has, self.drops + 1, 0).astype(np.int64)
        rates = lens[has].astype(np.int64)
        table, dists = BlockTable.join([(self.coded, self.off, rates, rate_off,
                                         np.zeros(rates.shape[0]), num_bps)])
        return frame_cls(params, cs, plans, table, dists, *layout)


def _block_layout(tables):
    """(component of every block, first block of each tile) over the frame's tiles (their
    :class:`_PlanTables`): what every round's frame shares, put together once a frame."""
    sizes = [t.plan.cb.shape[0] for t in tables]
    first = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    return np.concatenate([t.components for t in tables]), first


@njit(cache=True, nogil=True)
def _splice(a, a_off, rows, b, b_off):
    """Segments ``a`` (offsets a_off) with those of blocks ``rows`` (ascending) taken from
    ``b`` (offsets b_off, in the order of rows): (joined, joined offsets).  The blocks
    between two rows are copied as one run."""
    n = a_off.shape[0] - 1
    off = np.empty(n + 1, np.int64)
    off[0] = 0
    k = 0
    for i in range(n):
        if k < rows.shape[0] and rows[k] == i:
            off[i + 1] = off[i] + b_off[k + 1] - b_off[k]
            k += 1
        else:
            off[i + 1] = off[i] + a_off[i + 1] - a_off[i]
    out = np.empty(off[n], np.uint8)
    i = 0                              # the next block to place
    for k in range(rows.shape[0] + 1):
        r = rows[k] if k < rows.shape[0] else n
        if r > i:                      # blocks i..r-1 unchanged: one run of a
            out[off[i]:off[r]] = a[a_off[i]:a_off[r]]
        if r < n:
            out[off[r]:off[r + 1]] = b[b_off[k]:b_off[k + 1]]
        i = r + 1
    return out, off


def _code(frame_cls, params, cs, plans, flats, drops, pool, kernel, tables, layout,
          segments: _Segments | None = None, d_drops=None):
    """The frame with every block at plane drops[b]: (Frame, its _Segments).  With the
    ``segments`` of an earlier round only the blocks whose plane differs are coded.
    ``tables``: the plans' :class:`_PlanTables`; ``layout``: their :func:`_block_layout`;
    ``d_drops``: drops already on the GPU (or None)."""
    if segments is None:
        coded, off = _code_rows(plans, flats, None, drops, pool, kernel, tables, d_drops)
        segments = _Segments(coded, off, drops.copy())
    else:
        rows = np.flatnonzero(segments.drops != drops).astype(np.int64)
        if rows.size:
            coded, off = _code_rows(plans, flats, rows, drops, pool, kernel, tables)
            segments = segments.replaced(rows, coded, off, drops)
    return segments.frame(frame_cls, params, cs, plans, layout), segments


def encode_ht_frame(frame_cls, params, cs, plans, flats, base_step, pool=None,
                    stats: dict | None = None, kernel: str = "auto",
                    blocks: dict | None = None) -> bytes:
    """The HTJ2K codestream of a frame after the forward stage (``flats``: each tile's
    quantised int32 coefficients in plan layout, numpy, or CuPy to code the blocks, and work
    out the budget's plane figures, on the GPU on the current stream); ``params.frame_bytes``
    the budget or None.
    ``frame_cls`` is :class:`.encoder.Frame`; ``pool`` a :class:`.blocks.TierOnePool`
    (or None).  ``stats`` receives "drops" (per block), "rounds" and "coded" (blocks coded
    over all rounds: a later round codes only the blocks whose plane changed).  ``kernel``:
    which GPU kernel codes the blocks (:data:`.tier1.ht_gpu_plan.KERNEL_CHOICES`; CuPy flats
    only).
    ``blocks``: the caller's dict in which what each plan's frames share is kept between
    frames (:class:`_PlanTables`: block weights and components, and on the GPU the plan's
    :class:`.tier1.ht_gpu.BlockSet`; None: made every frame)."""
    from dataclasses import replace

    from .writer import allocate_and_write, allocate_stream
    budget = params.frame_bytes
    keep_all = replace(params, frame_bytes=None, component_bytes=None)
    nblocks = sum(plan.cb.shape[0] for plan in plans)
    drops = np.zeros(nblocks, np.int64)
    tables = _plan_tables(plans, blocks)
    if budget is None:
        frame, _ = _code(frame_cls, keep_all, cs, plans, flats, drops, pool, kernel, tables,
                         _block_layout(tables))
        if stats is not None:
            stats.update(drops=drops, rounds=1, coded=nblocks)
        return allocate_and_write(frame, base_step)
    choice = _plane_choice(pool, plans, flats, params, tables, kernel)
    target = 8.0 * budget * AIM  # estimated bits; corrected by what is measured
    goal = budget * (1.0 + FILL) / 2.0             # bytes aimed at, inside [FILL, 1] x budget
    best = under = over = None   # (estimated bits, bytes): the largest that fit, least over
    segments = None      # the blocks as last coded: a round codes only those that change
    layout = _block_layout(tables)
    coded = rounds = 0

    def code(drops):
        nonlocal segments, coded
        before = segments
        frame, segments = _code(frame_cls, keep_all, cs, plans, flats, drops, pool, kernel,
                                tables, layout, segments, choice.on_device(drops))
        coded += nblocks if before is None else int((before.drops != drops).sum())
        return frame

    last = None
    for rounds in range(1, ROUNDS + 1):
        drops = choice.select(target)
        if last is not None and np.array_equal(drops, last):
            rounds -= 1              # the same planes again: the same stream, nothing to gain
            break
        last = drops
        frame = code(drops)
        data = allocate_stream(frame, base_step)    # joined only if it is the one kept
        size = len(data)
        if size <= budget and (best is None or size > len(best[0])):
            best = data, drops
        if budget * FILL <= size <= budget:
            break
        est = choice.estimate(drops)   # only where another round follows (a read-back)
        if size <= budget:
            if under is None or est > under[0]:
                under = est, size
        elif over is None or est < over[0]:
            over = est, size
        if under is not None and over is not None and over[0] > under[0]:
            # bracketed: interpolate between the two (the size grows with the estimate)
            target = under[0] + (goal - under[1]) * (over[0] - under[0]) / \
                max(over[1] - under[1], 1)
        else:                    # one side only: scale the bodies to what is left of the goal
            body = float(frame.table.body_bytes(frame.table.npasses))
            target = est * max(goal - (size - body), 0.0) / max(body, 1.0)
    while best is None:  # still over: aim lower until it fits (headers bound the loop)
        target *= 0.8
        drops = choice.select(target)
        data = allocate_stream(code(drops), base_step)
        rounds += 1
        if len(data) <= budget:
            best = data, drops
        elif target < 1.0 or rounds > 40:
            raise ValueError(f"cannot fit the HTJ2K codestream in {budget} bytes")
    if stats is not None:
        stats.update(drops=best[1], rounds=rounds, coded=coded)
    return bytes(best[0])


def _box(kind: bytes, body: bytes) -> bytes:
    return (8 + len(body)).to_bytes(4, "big") + kind + body


def jph_file(codestream: bytes, *, colourspace: int | None = None) -> bytes:
    """Wrap an HTJ2K codestream in a JPH file (T.814 Annex D: the JP2 family with the
    "jph " brand): signature, ftyp (brand and compatibility "jph "), jp2h with ihdr (sizes,
    components and bit depth from SIZ, C = 7, UnkC 0, IPR 0) and an enumerated colr
    (``colourspace``: EnumCS, default sRGB (16) for 3 components or more, else greyscale
    (17)), then the codestream in jp2c."""
    from cinegpu.decode.codestream.header import parse_codestream
    siz = parse_codestream(codestream).siz
    depths = {siz.Ssiz[c] for c in range(siz.Csiz)}
    bpc = depths.pop() if len(depths) == 1 else 0xFF
    cs = colourspace if colourspace is not None else (16 if siz.Csiz >= 3 else 17)
    ihdr = _box(b"ihdr", (siz.Ysiz - siz.YOsiz).to_bytes(4, "big")
                + (siz.Xsiz - siz.XOsiz).to_bytes(4, "big") + siz.Csiz.to_bytes(2, "big")
                + bytes([bpc, 7, 0, 0]))
    parts = [ihdr]
    if bpc == 0xFF:
        parts.append(_box(b"bpcc", bytes(siz.Ssiz[c] for c in range(siz.Csiz))))
    parts.append(_box(b"colr", bytes([1, 0, 0]) + cs.to_bytes(4, "big")))
    return (b"\x00\x00\x00\x0cjP  \r\n\x87\n"
            + _box(b"ftyp", b"jph " + (0).to_bytes(4, "big") + b"jph ")
            + _box(b"jp2h", b"".join(parts)) + _box(b"jp2c", codestream))
