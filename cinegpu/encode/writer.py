"""Rate allocation to the byte budget and the final codestream (A.3: main header,
tile-parts of SOT + SOD + packets, EOC).

The budget counts every byte of the codestream.  Packet headers depend on
what is included, so allocation and writing alternate: choose the passes
for (budget - overhead) body bytes with the PCRD threshold, write the whole
codestream exactly, measure the overhead (headers, markers), repeat until it
fits (a few rounds; each is exact, nothing is estimated at the end).  From the
second round on, the overhead set aside follows the header bytes' growth with the
body over the last two rounds (:func:`_next_overhead`), so the rounds close in on the
budget from both sides instead of swinging about it.  Caps per component (DCI) work the
same way on each component's own bytes.

A round needs only lengths (:meth:`_Writer.measure`).  With one precinct's packets
depending on that precinct's code-blocks alone (B.9: its tag trees, Lblock states and
headers are its own), a round writes again only the packets of the precincts whose
blocks' passes changed since the round before, and keeps where each packet was written, so
that the chosen passes (the last round's) are put together from those packets without
writing any again.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from cinegpu.decode.plan import PB_CB_FIRST, PB_NCBX, PB_NCBY
from cinegpu.decode.tier2.progression import packet_order

from . import markers as mk
from . import rate_gpu
from .blocks import BlockTable
from .markers import main_header
from .quant import block_weights
from .rate import hull_of
from .tier2 import TileCoder
from .tier2.packets import TilePackets

__all__ = ["allocate_and_write", "allocate_stream"]

MAX_ROUNDS = 10
#: Stop refining once the stream is within this fraction below the budget.
SLACK = 0.001


#: Bytes of a tile-part's SOT and SOD markers (A.4.2, A.4.3).
TILE_PART_HEAD = mk.SOT_BYTES + 2


def _block_precincts(plan) -> np.ndarray:
    """The precinct of each of the tile's code-blocks (in ``plan.cb`` order), from the
    plan's precinct-band tables: a block lies in one band of one precinct."""
    prec_pb, pb = plan.prec_pb, plan.pb
    rows = _ramp(prec_pb[:, 0], prec_pb[:, 1])                  # precinct-band rows
    rows_prec = np.repeat(np.arange(len(prec_pb), dtype=np.int64), prec_pb[:, 1])
    counts = pb[rows, PB_NCBX] * pb[rows, PB_NCBY]
    out = np.full(plan.cb.shape[0], -1, np.int64)
    out[_ramp(pb[rows, PB_CB_FIRST], counts)] = np.repeat(rows_prec, counts)
    return out


def _ramp(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """starts[0], starts[0] + 1, ..., counts[0] of them, then the same from starts[1], ..."""
    starts, counts = np.asarray(starts, np.int64), np.asarray(counts, np.int64)
    before = np.cumsum(counts) - counts
    return np.repeat(starts - before, counts) + np.arange(int(counts.sum()), dtype=np.int64)


class _Measured:
    """Packet lengths of a writer's tiles for ``passes``: per tile, each packet's bytes
    (header and body) and its body's, in the tile's packet order; and where each packet was
    written (``sources``: per tile, the :class:`TilePackets` of the rounds that wrote some of
    its packets, with each packet's source and its index there), so that the codestream of
    these passes is put together without writing a packet again."""

    def __init__(self, passes: np.ndarray, lengths: list, bodies: list, sources: list):
        self.passes, self.lengths, self.bodies = passes, lengths, bodies
        self.sources = sources


def _whole_source(tp) -> tuple[list, np.ndarray, np.ndarray]:
    """A tile's packet sources when one writing made them all."""
    n = tp.ends.shape[0]
    return [tp], np.zeros(n, np.int64), np.arange(n, dtype=np.int64)


def _merged(source) -> TilePackets:
    """One :class:`TilePackets` of a tile's packets from the writings that made them
    (:class:`_Measured` ``sources``): each packet's header bytes and body runs taken from its
    own writing, in packet order (a precinct's packets depend on its own blocks alone)."""
    tps, src, idx = source
    if len(tps) == 1 and (idx == np.arange(idx.shape[0])).all():
        return tps[0]
    n = src.shape[0]
    h0, h1 = np.zeros(n, np.int64), np.zeros(n, np.int64)
    r0, r1 = np.zeros(n, np.int64), np.zeros(n, np.int64)
    body = np.zeros(n, np.int64)
    hoff = roff = 0
    heads, runs = [], []
    for s, tp in enumerate(tps):
        mine = np.flatnonzero(src == s)
        j = idx[mine]
        head_end = np.asarray(tp.head_end, np.int64)
        run_end = np.asarray(tp.run_end, np.int64)
        h1[mine] = hoff + head_end[j]
        h0[mine] = hoff + np.where(j > 0, head_end[j - 1], 0)
        r1[mine] = roff + run_end[j]
        r0[mine] = roff + np.where(j > 0, run_end[j - 1], 0)
        body[mine] = np.asarray(tp.body_len, np.int64)[j]
        used = int(head_end[-1]) if head_end.shape[0] else 0
        nruns = int(run_end[-1]) if run_end.shape[0] else 0
        heads.append(np.asarray(tp.hbuf, np.uint8)[:used])
        runs.append(tp.runs[:nruns])
        hoff += used
        roff += nruns
    hbuf = np.concatenate(heads)[_ramp(h0, h1 - h0)]
    runs = np.concatenate(runs)[_ramp(r0, r1 - r0)]
    return TilePackets(hbuf, np.cumsum(h1 - h0), body, runs, np.cumsum(r1 - r0),
                       tps[0].coded)


def _prec_components(plan) -> np.ndarray:
    out = np.zeros(plan.num_precincts, np.int64)
    for tc in plan.components:
        for res in tc.resolutions:
            out[res.prec_first:res.prec_first + res.npx * res.npy] = tc.c
    return out


class _Writer:
    def __init__(self, frame, base_step):
        self.frame = frame
        self.params = frame.params
        self.main_header = main_header
        self.base_step = base_step
        self.orders = [np.ascontiguousarray(packet_order(plan, frame.cs.siz), np.int64)
                       for plan in frame.plans]
        self.table = frame.table
        self.nblocks = len(self.table)
        self.coders = [TileCoder(plan, self.table[int(base):int(base) + plan.cb.shape[0]],
                                 self.params.cblk_style)
                       for plan, base in zip(frame.plans, frame.base)]
        self.rounds = 0
        #: codestreams put together from the measured packets, none written again
        self.reused = 0
        #: whether rate control ended under the budget with a component that had room
        #: holding every pass it could take (set by the allocation; no budget: False)
        self.starved = False
        # component of each packet, in each tile's packet order
        self.packet_comp = [_prec_components(plan)[order[:, 0]]
                            for plan, order in zip(frame.plans, self.orders)]
        # tile-parts: runs of a tile's packets, (first, after, component), a new one where
        # the component changes when the profile splits them (DCI)
        self.tile_parts = [_tile_parts(comp, self.params.split_components)
                           for comp in self.packet_comp]
        self.total_passes = self.table.npasses
        self._measured: _Measured | None = None      # the last write's or measure's lengths

    @functools.cached_property
    def whole_bodies(self) -> np.ndarray:
        """Per component, the bytes of all its hull segments (float64): its body when rate
        control takes every pass it can (a pass past the last hull point adds bytes and no
        distortion decrease, so it is never taken)."""
        hull = self.hull
        n = len(hull.slope)
        return np.array([float(hull.comp_csum[c][n - 1]) if n else 0.0
                         for c in range(self.params.ncomp)])

    def full(self, size: int, comp_total: np.ndarray, comp_body: np.ndarray, budget: float,
             caps) -> bool:
        """Whether a codestream of ``size`` bytes that fits leaves nothing worth adding: no
        component with room (:func:`_room`: the frame more than SLACK under ``budget``, the
        component more than SLACK under its cap of ``caps``, None: no caps) lacks some of
        its hull segments."""
        return not (_room(size, comp_total, budget, caps)
                    & ~_whole(comp_body, self.whole_bodies)).any()

    @functools.cached_property
    def block_precincts(self) -> list[np.ndarray]:
        """Per tile, the precinct of each code-block (:func:`_block_precincts`)."""
        return [_block_precincts(plan) for plan in self.frame.plans]

    @functools.cached_property
    def hull(self):
        """PCRD-opt's hull of the frame's passes (:mod:`.rate`), made when first asked for:
        a frame that keeps every pass in one layer (HT without a budget) never needs it."""
        frame = self.frame
        weights = np.concatenate([block_weights(plan, self.params) for plan in frame.plans]) \
            if self.nblocks else np.zeros(0)
        if getattr(frame, "device", None) is not None:   # tier-1's figures are on the GPU
            return rate_gpu.gpu_hull(frame.device, weights, frame.comp, self.params.ncomp)
        hull = hull_of(self.table.rate_off, self.table.rates, frame.dists, weights)
        hull.by_component(frame.comp, self.params.ncomp)
        return hull

    def limits(self, body: float, caps=None) -> np.ndarray:
        """Per component, the count of leading hull segments it keeps
        (:meth:`.rate.Hull.frame_limits`)."""
        return self.hull.frame_limits(body, caps)

    def comp_count(self, c: int, budget: float) -> int:
        return self.hull.comp_count(c, budget)

    def layer_passes(self, lims: np.ndarray | None) -> np.ndarray:
        """(layers, nblocks) cumulative passes: the final layer from ``lims``, the count of
        leading hull segments each component keeps (None: all passes), earlier layers at
        halving body sizes (by the same hull order)."""
        p = self.params
        final = self.total_passes if lims is None else self.hull.passes_for(lims)
        out = np.zeros((p.layers, self.nblocks), np.int64)
        out[-1] = final
        if p.layers == 1:
            return out
        hull = self.hull
        body = float(self.frame_body(final))
        for layer in range(p.layers - 1):
            count = np.full(p.ncomp, hull.count_for(body / 2.0 ** (p.layers - 1 - layer)),
                            np.int64)
            if lims is not None:
                count = np.minimum(count, lims)
            out[layer] = np.minimum(hull.passes_for(count), final)
        return out

    def frame_body(self, passes: np.ndarray) -> int:
        return self.table.body_bytes(passes)

    def write(self, passes: np.ndarray) -> tuple["_Stream", np.ndarray, np.ndarray]:
        """The codestream for ``passes`` (its bytes made only when asked for); bytes per
        component in total and in bodies."""
        last = self._measured
        if last is not None and np.array_equal(last.passes, passes):
            tps = [_merged(source) for source in last.sources]     # measured: none written
            self.reused += 1
        else:
            tps = [coder.tile_packets(self._tile(passes, t), order)
                   for t, (coder, order) in enumerate(zip(self.coders, self.orders))]
        self._measured = _Measured(passes.copy(), [np.diff(tp.ends, prepend=0) for tp in tps],
                                   [tp.body_len for tp in tps],
                                   [_whole_source(tp) for tp in tps])
        header, sizes, comp_total, comp_body = self._sizes(self._measured)
        parts = []  # (tile, SOT + SOD bytes, TilePackets, first packet, packet after)
        for t, i, psot in sizes:
            a, b, _ = self.tile_parts[t][i]
            head = mk.sot(Isot=t, Psot=psot, TPsot=i, TNsot=len(self.tile_parts[t]))
            parts.append((t, head + mk.sod(), tps[t], a, b))
        return _Stream(header, parts), comp_total, comp_body

    def measure(self, passes: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
        """``len()`` of :meth:`write`'s codestream for ``passes`` and its bytes per component
        in total and in bodies, without the codestream: only the packets of the precincts
        whose blocks' passes differ from the last :meth:`write` or :meth:`measure` are
        written again (their headers, to learn their lengths)."""
        last = self._measured
        lengths, bodies, sources = [], [], []
        for t, (coder, order) in enumerate(zip(self.coders, self.orders)):
            mine = self._tile(passes, t)
            if last is None:
                tp = coder.tile_packets(mine, order)
                lengths.append(np.diff(tp.ends, prepend=0))
                bodies.append(tp.body_len)
                sources.append(_whole_source(tp))
                continue
            changed = (mine != self._tile(last.passes, t)).any(axis=0)
            length, body, source = last.lengths[t], last.bodies[t], last.sources[t]
            if changed.any():
                precincts = np.zeros(len(self.frame.plans[t].prec_pb), bool)
                precincts[self.block_precincts[t][changed]] = True
                again = np.flatnonzero(precincts[order[:, 0]])   # every layer of them, in order
                tp = coder.tile_packets(mine, order[again])
                length, body = length.copy(), body.copy()
                length[again] = np.diff(tp.ends, prepend=0)
                body[again] = tp.body_len
                tps, src, idx = source
                src, idx = src.copy(), idx.copy()
                src[again] = len(tps)
                idx[again] = np.arange(len(again), dtype=np.int64)
                source = (tps + [tp], src, idx)
            lengths.append(length)
            bodies.append(body)
            sources.append(source)
        self._measured = _Measured(passes.copy(), lengths, bodies, sources)
        header, sizes, comp_total, comp_body = self._sizes(self._measured)
        return len(header) + sum(psot for _, _, psot in sizes) + 2, comp_total, comp_body

    def _tile(self, passes: np.ndarray, t: int) -> np.ndarray:
        """Tile t's columns of the frame's (layers, blocks) ``passes``."""
        base = int(self.frame.base[t])
        return passes[:, base:base + self.frame.plans[t].cb.shape[0]]

    def _sizes(self, m: _Measured):
        """(main header, (tile, tile-part, Psot) of every tile-part, bytes per component in
        total and in bodies) of the packet lengths ``m``."""
        p = self.params
        comp_total = np.zeros(p.ncomp, np.int64)
        comp_body = np.zeros(p.ncomp, np.int64)
        sizes = []
        for t, (length, body) in enumerate(zip(m.lengths, m.bodies)):
            comp = self.packet_comp[t]
            comp_total += np.bincount(comp, length, p.ncomp).astype(np.int64)
            comp_body += np.bincount(comp, body, p.ncomp).astype(np.int64)
            ends = np.cumsum(length)
            for i, (a, b, c) in enumerate(self.tile_parts[t]):
                size = int(ends[b - 1] - (ends[a - 1] if a else 0)) if b > a else 0
                sizes.append((t, i, TILE_PART_HEAD + size))
                comp_total[c] += TILE_PART_HEAD
        header = self.main_header(p, self.base_step, [(t, psot) for t, _, psot in sizes])
        return header, sizes, comp_total, comp_body


def _tile_parts(comp: np.ndarray, split: bool) -> list[tuple[int, int, int]]:
    """(first packet, packet after, component) of each tile-part of a tile whose packets
    are of components ``comp`` (in order): one tile-part, or one per run of a component
    when ``split``."""
    cuts = np.flatnonzero(comp[1:] != comp[:-1]) + 1 if split else np.zeros(0, np.int64)
    firsts = np.concatenate(([0], cuts)).astype(np.int64).tolist()
    lasts = np.concatenate((cuts, [len(comp)])).astype(np.int64).tolist()
    return [(a, b, int(comp[a]) if len(comp) else 0) for a, b in zip(firsts, lasts)]


class _Stream:
    """A codestream as its main header and tile-parts (SOT + SOD bytes, then a run of a
    tile's packets), EOC implied: ``len()`` without joining, ``bytes()`` joins once: every
    packet copied into one buffer by compiled code without the GIL, then that buffer into
    the bytes object."""

    def __init__(self, header: bytes, parts: list):
        self.header, self.parts = header, parts
        self.size = len(header) + sum(len(h) + tp.size(a, b) for _, h, tp, a, b in parts) + 2

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        out = np.empty(self.size, np.uint8)
        at = _put(out, 0, self.header)
        for _, head, tp, a, b in self.parts:
            at = tp.into(out, _put(out, at, head), a, b)
        at = _put(out, at, mk.eoc())
        if at != self.size:
            raise AssertionError("codestream join: the pieces do not add up to the size")
        return out.tobytes()


def _put(out: np.ndarray, at: int, data: bytes) -> int:
    """``data`` into ``out`` from byte ``at``; the byte after it."""
    out[at:at + len(data)] = np.frombuffer(data, np.uint8)
    return at + len(data)


def spare_planes(table: BlockTable, passes: np.ndarray, percentile: float = 5.0) -> int:
    """Bit-planes below the truncation point that (100 - percentile)% of the included
    code-blocks left untouched: K - 1 - floor((n + 1) / 3) for n of 3K - 2 passes kept."""
    k = table.num_bps
    n = np.asarray(passes, np.int64)
    used = n > 0
    if not used.any():
        return 0
    untouched = k[used] - 1 - (n[used] + 1) // 3
    return int(np.percentile(untouched, percentile))


def allocate_and_write(frame, base_step: float, stats: dict | None = None) -> bytes:
    """Choose every block's passes (PCRD-opt) for the budgets and write the codestream.
    ``stats`` (optional) receives "spare_planes" (see :func:`spare_planes`), "rounds" and
    "passes" (the passes kept of each block, int64)."""
    return bytes(allocate_stream(frame, base_step, stats))


def allocate_stream(frame, base_step: float, stats: dict | None = None) -> "_Stream":
    """:func:`allocate_and_write` without the join: the codestream's ``len()`` is known and
    ``bytes()`` of it makes its bytes (once, when the caller keeps it)."""
    stream, final, w = _allocate(frame, base_step)
    if stats is not None:
        stats["spare_planes"] = spare_planes(w.table, final)
        stats["rounds"] = w.rounds
        stats["passes"] = np.asarray(final, np.int64)
        stats["starved"] = w.starved
    return stream


def _allocate(frame, base_step: float):
    w = _Writer(frame, base_step)
    p = frame.params
    if p.frame_bytes is None and p.component_bytes is None:
        return w.write(w.layer_passes(None))[0], w.total_passes, w
    budget = p.frame_bytes if p.frame_bytes is not None else float("inf")
    cap = p.component_bytes
    if w.frame_body(w.total_passes) <= budget:
        full, full_comp, _ = w.write(w.layer_passes(None))
        if len(full) <= budget and (cap is None or (full_comp <= cap).all()):
            # everything fits: every component holds all its passes
            w.starved = bool(_room(len(full), full_comp, budget, cap).any())
            return full, w.total_passes, w
        overhead = len(full) - w.frame_body(w.total_passes)
    else:
        # markers, plus about 3 bytes of packet header per code-block (refined below)
        overhead = len(w.main_header(p, base_step, [(0, 0)] * 8)) + 2 + 3 * w.nblocks
    hull = w.hull
    comp_over = np.zeros(p.ncomp)
    best = None                           # (bytes, passes) of the largest that fits
    last = None
    before = None                         # the last round's (body, header), frame ...
    comp_before = None                    # ... and per component
    for _ in range(MAX_ROUNDS):
        lims = w.limits(budget - overhead, None if cap is None else cap - comp_over)
        passes = w.layer_passes(lims)
        size, comp_total, comp_body = w.measure(passes)
        w.rounds += 1
        body = comp_body.sum()
        fits = size <= budget and (cap is None or (comp_total <= cap).all())
        if fits and (best is None or size > best[0]):
            best = size, passes
        if fits and w.full(size, comp_total, comp_body, budget, cap):
            break
        if (size, tuple(comp_total)) == last:
            break                         # the same stream again: nothing left to trade
        last = size, tuple(comp_total)
        new_over = size - body
        overhead = _next_overhead(budget, body, new_over, before)
        if overhead is None:
            overhead = new_over + (size - budget + 8 if size > budget else 0)
        comp_extra = comp_total - comp_body
        for c in range(p.ncomp):
            over = comp_total[c] - cap + 8 if cap is not None and comp_total[c] > cap else 0
            guess = None if cap is None or comp_before is None else \
                _next_overhead(cap, comp_body[c], comp_extra[c], comp_before[c])
            comp_over[c] = guess if guess is not None else \
                max(comp_extra[c] + over, comp_over[c] if over else comp_extra[c])
        before = body, new_over
        comp_before = list(zip(comp_body, comp_extra))
    if best is None:
        best = _shrink_until_fit(w, hull, budget, cap, overhead, comp_over)
    return _written(w, budget, cap, *best)


def _next_overhead(limit: float, body: float, header: float, before) -> float | None:
    """The header bytes to set aside under ``limit`` for the next round, from this round's
    ``body`` and ``header`` bytes and the round before's (``before``: (body, header), or
    None): headers grow with the body they carry, about linearly over a round's change, so
    the body that fills ``limit`` with its own header is where that line meets it.  None
    where the two rounds do not give a line (no earlier round, the same body, or a slope
    outside 0 .. 0.5 header bytes a body byte) or there is no limit (infinite)."""
    if not before or body == before[0] or not math.isfinite(limit):
        return None
    slope = (header - before[1]) / (body - before[0])
    if not 0.0 <= slope <= 0.5:
        return None
    fill = (limit - header + slope * body) / (1.0 + slope)
    return limit - fill


def _written(w: _Writer, budget: float, cap, size: int, passes: np.ndarray):
    """(codestream, final layer's passes, writer) of the ``passes`` measured at ``size``;
    sets the writer's ``starved`` (under ``budget`` and the components' ``cap``)."""
    stream, comp_total, comp_body = w.write(passes)
    if len(stream) != size:
        raise AssertionError("tier-2: the codestream's length is not the one measured")
    w.starved = bool((_room(size, comp_total, budget, cap)
                      & _whole(comp_body, w.whole_bodies)).any())
    return stream, passes[-1], w


def _whole(comp_body: np.ndarray, whole_bodies: np.ndarray) -> np.ndarray:
    """Per component, whether its ``comp_body`` bytes hold all its hull segments
    (:attr:`_Writer.whole_bodies`)."""
    return comp_body >= whole_bodies - 0.5


def _room(size: int, comp_total: np.ndarray, budget: float, cap) -> np.ndarray:
    """Per component, whether a codestream of ``size`` bytes could take more of it: the
    frame more than SLACK under its ``budget`` and the component more than SLACK under its
    ``cap`` (None: no caps).  A component with room that holds every pass it could take
    (all its hull segments) was starved by passes left uncoded (early stop's floor)."""
    frame = size < budget * (1 - SLACK)
    if cap is None:
        return np.full(len(comp_total), frame)
    return frame & (np.asarray(comp_total) < cap * (1 - SLACK))


def _shrink_until_fit(w, hull, budget, cap, overhead, comp_over):
    """When the estimates keep overshooting (header bytes that grow with what is kept),
    aim lower and lower until the stream fits: at worst only headers are left, so this
    ends within the loop's bound."""
    ncomp = len(comp_over)
    aim = 1.0
    for _ in range(80):
        aim *= 0.9
        lims = np.full(ncomp, hull.count_for(max(budget * aim - overhead, 0)), np.int64)
        if cap is not None:
            for c in range(ncomp):
                lims[c] = min(lims[c], w.comp_count(c, max(cap * aim - comp_over[c], 0)))
        passes = w.layer_passes(lims)
        size, comp_total, _ = w.measure(passes)
        w.rounds += 1
        if size <= budget and (cap is None or (comp_total <= cap).all()):
            return size, passes
    raise ValueError(f"cannot fit the codestream in {budget} bytes: its headers alone exceed it")
