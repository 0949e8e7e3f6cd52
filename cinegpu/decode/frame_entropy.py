"""Tier-2 and tier-1 of every tile of a frame, in two compiled calls (T.800 B.9, B.10, Annex D).

:func:`cinegpu.decode.tile.decode_tile` reads one tile a call; a frame of 225 small tiles
(p1_05) then pays tens of microseconds of Python and small arrays per tile. Here the tiles'
plan tables are stacked once per set of plans (:class:`FrameTables`, kept by the decoder
with its :class:`~cinegpu.decode.transform.layout.FrameLayout`), and a frame costs one
:func:`~cinegpu.decode.tier2.packets.read_frame_packets` call (every tile's packets), one
:func:`~cinegpu.decode.tier2.packets.gather_segments` and one tier-1 call
(:func:`~cinegpu.decode.tier1.decode_codeblocks`) over the frame's coefficient buffer.
Each code-block gets the bytes and passes it gets tile by tile, so the coefficients are
those of the per-tile path bit for bit; faults are met tile by tile in tile order through
the decoding policy, as there (strict: the first raises).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import tier1
from .codestream.header import Codestream
from .errors import InvalidSegment, TruncatedCodestream
from .plan import PB_CB_FIRST, PB_NODES, TilePlan, stacked
from .strictness import Strictness
from .tier2 import packets as P
from .tier2.progression import frame_packet_orders
from .tile import T2_MESSAGES, TileReport, check_tier1_status, packed_headers

#: Packet orders a FrameTables keeps (one per combination of the tiles' reachable layers).
ORDERS_PER_FRAME = 4


@dataclass(eq=False)
class FrameTables:
    """The tier-2 / tier-1 tables of a frame's tiles, stacked (built once per set of plans).

    ``prec_pb``, ``pb``, ``cb``, ``cb_keep``: the plans' tables one after another, precinct-band,
    code-block and tag-tree node indices counted from the frame's first row, and each
    code-block's ``CB_OUT`` from the start of the frame's coefficient buffer; ``nodes``: tag-tree
    nodes in all; ``prec_first``, ``cb_first``: each tile's first precinct and code-block row
    (one more entry at the end: the totals).
    """

    prec_pb: np.ndarray
    pb: np.ndarray
    cb: np.ndarray
    cb_keep: np.ndarray
    nodes: int
    prec_first: list
    cb_first: list
    #: whether a code-block may be HT (T.814): a plan's ``ht``
    ht: bool
    #: the frame's packet orders (precincts counted from the frame's first) and each tile's
    #: rows in them, by the layers each tile's data can reach
    orders: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, plans: list[TilePlan], offsets: list[int]) -> FrameTables:
        """The plans' tables stacked (a tile alone at offset 0: its plan's own, read-only both)."""
        if len(plans) == 1 and offsets[0] == 0:
            p = plans[0]
            return cls(p.prec_pb, p.pb, p.cb, p.cb_keep, p.nodes, [0, p.prec_pb.shape[0]], [0, p.cb.shape[0]],
                       bool(p.ht))
        counts = np.array([(p.prec_pb.shape[0], p.pb.shape[0], p.cb.shape[0], p.nodes) for p in plans],
                          np.int64).reshape(-1, 4)
        firsts = np.zeros((len(plans) + 1, 4), np.int64)
        np.cumsum(counts, axis=0, out=firsts[1:])
        prec_pb = stacked([p.prec_pb for p in plans], (2,), np.int64)
        prec_pb[:, 0] += np.repeat(firsts[:-1, 1], counts[:, 0])
        pb = stacked([p.pb for p in plans], (4,), np.int64)
        pb[:, PB_CB_FIRST] += np.repeat(firsts[:-1, 2], counts[:, 1])
        pb[:, PB_NODES] += np.repeat(firsts[:-1, 3], counts[:, 1])
        cb = stacked([p.cb for p in plans], (tier1.CB_COLUMNS,), np.int64)
        cb[:, tier1.CB_OUT] += np.repeat(np.asarray(offsets, np.int64), counts[:, 2])
        return cls(prec_pb, pb, cb, stacked([p.cb_keep for p in plans], (), np.int8), int(firsts[-1, 3]),
                   firsts[:, 0].tolist(), firsts[:, 2].tolist(), any(p.ht for p in plans))

    def packet_orders(self, plans: list[TilePlan], siz, reachable: list[int]) -> tuple[np.ndarray, list[int]]:
        """Every tile's :func:`~.tier2.progression.packet_order` one after another, precincts
        counted from the frame's first, and each tile's first row (one more at the end)."""
        layers = tuple(min(p.layers, max(r, 0)) for p, r in zip(plans, reachable))
        found = self.orders.get(layers)
        if found is None:
            if len(self.orders) >= ORDERS_PER_FRAME:
                self.orders.clear()
            found = self.orders[layers] = frame_packet_orders(plans, siz, list(layers), self.prec_first)
        return found


def _tile_bytes(cs: Codestream, plans: list[TilePlan], ppm: dict | None):
    """(body, hdr, ranges): the frame's tile-part bodies and PPM/PPT packet headers as two
    read-only uint8 arrays, and per tile (body start, body end, hdr start, hdr end, shared).
    Tiles of one tile-part without PPM/PPT are read in place in the codestream."""
    data = cs.data
    tiles = [cs.tiles[p.index] for p in plans]
    if ppm is None:
        ranges = []
        for t in tiles:
            if len(t.parts) != 1 or t.header.ppt:
                break
            part = t.parts[0]
            ranges.append((part.start, part.end, part.start, part.end, 1))
        else:
            body = np.frombuffer(data, np.uint8)
            return body, body, ranges
    bodies, heads, ranges = [], [], []
    at = hat = 0
    for t in tiles:
        b = b"".join(bytes(data[p.start : p.end]) for p in t.parts)
        h = packed_headers(cs, t, ppm)
        if h is None:
            ranges.append((at, at + len(b), at, at + len(b), 1))
        else:
            ranges.append((at, at + len(b), hat, hat + h.shape[0], 0))
            heads.append(h.tobytes())
            hat += h.shape[0]
        bodies.append(b)
        at += len(b)
    return np.frombuffer(b"".join(bodies), np.uint8), np.frombuffer(b"".join(heads), np.uint8), ranges


def entropy_decode_frame(cs: Codestream, plans: list[TilePlan], offsets: list[int], tables: FrameTables, *,
                         layers: int | None, ppm: dict | None, policy: Strictness,
                         coeffs: np.ndarray) -> list[TileReport]:
    """Tier-2 and tier-1 of every tile of ``plans`` into ``coeffs`` (the frame's int32 buffer;
    every sample is written). Returns one :class:`TileReport` per plan; the frame's tier-2
    and tier-1 seconds are the first report's."""
    t0 = time.perf_counter()
    body, hdr, ranges = _tile_bytes(cs, plans, ppm)
    # a packet takes at least one byte of header: layers beyond the bytes are never reached
    reach = [b1 - b0 if sh else h1 - h0 for b0, b1, h0, h1, sh in ranges]
    orders, starts = tables.packet_orders(plans, cs.siz, reach)
    rows = np.array([(b0, b1, h0, h1, sh, starts[i], starts[i + 1],
                      p.layers if layers is None else min(layers, p.layers), int(p.sop), int(p.eph),
                      int(not policy.strict))
                     for i, (p, (b0, b1, h0, h1, sh)) in enumerate(zip(plans, ranges))],
                    np.int64).reshape(-1, P.T_COLUMNS)
    results = np.zeros((len(plans), 4), np.int64)
    table = tables.cb.copy()
    pieces, n_pieces = P.read_frame_packets(body, hdr, rows, orders, tables.prec_pb, tables.pb, table,
                                            tables.cb_keep, tables.nodes, results)
    coded, seg_lengths, seg_passes = P.gather_segments(body, pieces, n_pieces, table)
    t1 = time.perf_counter()
    status = (tier1.decode_codeblocks(coded, table, seg_lengths, seg_passes, coeffs, ht=tables.ht)
              if table.shape[0] else None)
    t2 = time.perf_counter()
    bad_t1 = status is not None and bool(status.any())
    reports = []
    for i, (plan, result) in enumerate(zip(plans, results.tolist())):
        report = TileReport(plan.index, packets_read=result[P.R_DONE], packets_total=starts[i + 1] - starts[i])
        if result[P.R_STATUS] != P.OK and result[P.R_STATUS] != P.ENDED:
            _tier2_fault(cs, plan, result[P.R_STATUS], result[P.R_DONE], result[P.R_WHERE] - ranges[i][0],
                         ranges[i][4], policy, report)
        if bad_t1:
            rows = slice(tables.cb_first[i], tables.cb_first[i + 1])
            check_tier1_status(status[rows], plan, policy, report, table[rows, tier1.CB_NUM_BPS])
        reports.append(report)
    if reports:
        reports[0].tier2_s, reports[0].tier1_s = t1 - t0, t2 - t1
    return reports


def _tier2_fault(cs: Codestream, plan: TilePlan, status: int, done: int, where: int, shared: int,
                 policy: Strictness, report: TileReport) -> None:
    """A tile's broken packet stream (B.10), as :func:`~cinegpu.decode.tile.tier2_tile` reports it."""
    msg = f"tile {plan.index}, packet {done}: {T2_MESSAGES[status]}"
    offset = cs.tiles[plan.index].parts[0].start + where if shared else None
    cls = TruncatedCodestream if status in (P.E_HEADER_OVERRUN, P.E_BODY_OVERRUN) else InvalidSegment
    policy.fault(cls(msg, offset), report.faults, tile=plan.index, text=msg)
