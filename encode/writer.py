"""Rate allocation to the byte budget and the final codestream (A.3: main header,
tile-parts of SOT + SOD + packets, EOC).

The budget counts every byte of the codestream.  Packet headers depend on
what is included, so allocation and writing alternate: choose the passes
for (budget - overhead) body bytes with the PCRD threshold, write the whole
codestream exactly, measure the overhead (headers, markers), repeat until it
fits (a few rounds; each is exact, nothing is estimated at the end).  Caps
per component (DCI) work the same way on each component's own bytes.
"""

from __future__ import annotations

import functools

import numpy as np

from cinegpu.decode.tier2.progression import packet_order

from . import markers as mk
from .blocks import BlockTable
from .markers import main_header
from .quant import block_weights
from .rate import hull_of
from .tier2 import TileCoder

__all__ = ["allocate_and_write", "allocate_stream"]

MAX_ROUNDS = 10
#: Stop refining once the stream is within this fraction below the budget.
SLACK = 0.001


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
        # component of each packet, in each tile's packet order
        self.packet_comp = [_prec_components(plan)[order[:, 0]]
                            for plan, order in zip(frame.plans, self.orders)]
        self.total_passes = self.table.npasses

    @functools.cached_property
    def hull(self):
        """PCRD-opt's hull of the frame's passes (:mod:`.rate`), made when first asked for:
        a frame that keeps every pass in one layer (HT without a budget) never needs it."""
        frame = self.frame
        weights = np.concatenate([block_weights(plan, self.params) for plan in frame.plans]) \
            if self.nblocks else np.zeros(0)
        if getattr(frame, "device", None) is not None:   # tier-1's figures are on the GPU
            from .rate_gpu import gpu_hull
            return gpu_hull(frame.device, weights, frame.comp, self.params.ncomp)
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
        """The codestream for ``passes`` (its bytes made only when asked for: rate control
        needs the lengths of several candidates); bytes per component in total and in
        bodies."""
        p = self.params
        comp_total = np.zeros(p.ncomp, np.int64)
        comp_body = np.zeros(p.ncomp, np.int64)
        parts = []  # (tile, SOT + SOD bytes, TilePackets, first packet, packet after)
        for t, (coder, order) in enumerate(zip(self.coders, self.orders)):
            base = int(self.frame.base[t])
            n = self.frame.plans[t].cb.shape[0]
            tp = coder.tile_packets(passes[:, base:base + n], order)
            ends = tp.ends
            comp = self.packet_comp[t]
            comp_total += np.bincount(comp, np.diff(ends, prepend=0), p.ncomp).astype(np.int64)
            comp_body += np.bincount(comp, tp.body_len, p.ncomp).astype(np.int64)
            # tile-parts: runs of packets (a new one where the component changes)
            cuts = np.flatnonzero(comp[1:] != comp[:-1]) + 1 if p.split_components \
                else np.zeros(0, np.int64)
            firsts = np.concatenate(([0], cuts)).astype(np.int64).tolist()
            lasts = np.concatenate((cuts, [len(ends)])).astype(np.int64).tolist()
            for i, (a, b) in enumerate(zip(firsts, lasts)):
                c = int(comp[a]) if len(ends) else 0
                psot = mk.SOT_BYTES + 2 + tp.size(a, b)
                head = mk.sot(Isot=t, Psot=psot, TPsot=i, TNsot=len(firsts))
                parts.append((t, head + mk.sod(), tp, a, b))
                comp_total[c] += mk.SOT_BYTES + 2
        header = self.main_header(p, self.base_step,
                                  [(t, len(h) + tp.size(a, b)) for t, h, tp, a, b in parts])
        return _Stream(header, parts), comp_total, comp_body


class _Stream:
    """A codestream as its main header and tile-parts (SOT + SOD bytes, then a run of a
    tile's packets), EOC implied: ``len()`` without joining, ``bytes()`` joins once: one
    copy of every byte, from views of the headers and of tier-1's coded bytes."""

    def __init__(self, header: bytes, parts: list):
        self.header, self.parts = header, parts
        self.size = len(header) + sum(len(h) + tp.size(a, b) for _, h, tp, a, b in parts) + 2

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        pieces = [self.header]
        for _, head, tp, a, b in self.parts:
            pieces.append(head)
            pieces.extend(tp.pieces(a, b))
        pieces.append(mk.eoc())
        out = b"".join(pieces)
        if len(out) != self.size:
            raise AssertionError("codestream join: the pieces do not add up to the size")
        return out


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
            return full, w.total_passes, w  # everything fits
        overhead = len(full) - w.frame_body(w.total_passes)
    else:
        # markers, plus about 3 bytes of packet header per code-block (refined below)
        overhead = len(w.main_header(p, base_step, [(0, 0)] * 8)) + 2 + 3 * w.nblocks
    hull = w.hull
    comp_over = np.zeros(p.ncomp)
    best = None
    last = None
    for _ in range(MAX_ROUNDS):
        lims = w.limits(budget - overhead, None if cap is None else cap - comp_over)
        passes = w.layer_passes(lims)
        data, comp_total, comp_body = w.write(passes)
        w.rounds += 1
        body = comp_body.sum()
        fits = len(data) <= budget and (cap is None or (comp_total <= cap).all())
        if fits and (best is None or len(data) > len(best[0])):
            best = data, passes[-1], w
        if fits and len(data) >= budget * (1 - SLACK):
            break
        if (len(data), tuple(comp_total)) == last:
            break                         # the same stream again: nothing left to trade
        last = len(data), tuple(comp_total)
        new_over = len(data) - body
        overhead = new_over + (len(data) - budget + 8 if len(data) > budget else 0)
        for c in range(p.ncomp):
            extra = comp_total[c] - comp_body[c]
            over = comp_total[c] - cap + 8 if cap is not None and comp_total[c] > cap else 0
            comp_over[c] = max(extra + over, comp_over[c] if over else extra)
    if best is None:
        best = _shrink_until_fit(w, hull, budget, cap, overhead, comp_over)
    return best


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
        data, comp_total, _ = w.write(passes)
        w.rounds += 1
        if len(data) <= budget and (cap is None or (comp_total <= cap).all()):
            return data, passes[-1], w
    raise ValueError(f"cannot fit the codestream in {budget} bytes: its headers alone exceed it")
