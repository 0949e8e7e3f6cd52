"""One tile from coded bytes to quantised coefficients: tier-2 then tier-1.

The coefficients land in one flat int32 buffer laid out per subband (the
plan's ``Band.offset``), holding 2 x the reconstructed quantisation index
(tier-1's convention). Faults go through the decoding policy
(:class:`~cinegpu.decode.strictness.Strictness`): strict, the first one raises;
lenient, each is recorded as a typed :class:`~cinegpu.decode.strictness.Fault`
in the tile's :class:`TileReport`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import tier1
from .codestream.header import Codestream, Tile
from .errors import InvalidSegment, TruncatedCodestream
from .plan import TilePlan
from .strictness import Fault, Strictness
from .tier2 import packets as P
from .tier2.progression import packet_order

#: what each tier-2 status code of :mod:`.tier2.packets` says, for the tile reports and errors
T2_MESSAGES = {
    P.E_HEADER_OVERRUN: "packet header runs past the end of the tile data",
    P.E_BODY_OVERRUN: "packet body runs past the end of the tile data",
    P.E_BITPLANES: "zero bit-planes above the subband's magnitude bits",
    P.E_LBLOCK: "Lblock beyond 32 bits",
    P.E_PASSES: "more coding passes than a code-block can hold",
}


@dataclass
class TileReport:
    """What went wrong in one tile, for lenient decoding and the player.

    ``faults`` holds typed :class:`~cinegpu.decode.strictness.Fault` objects; each prints as
    one line ("tile missing", "3 code-blocks with tier-1 faults", ...).
    """

    tile: int
    packets_read: int = 0
    #: packets listed: those of the layers the tile's bytes can reach (tier2/progression.py)
    packets_total: int = 0
    faults: list[Fault] = field(default_factory=list)
    concealed_blocks: int = 0
    tier2_s: float = 0.0  #: seconds in packet parsing and segment gathering
    tier1_s: float = 0.0  #: seconds in code-block decoding


def _tile_data(cs: Codestream, tile: Tile) -> np.ndarray:
    data = cs.data
    return np.frombuffer(b"".join(bytes(data[p.start : p.end]) for p in tile.parts), np.uint8)


def packed_headers(cs: Codestream, tile: Tile, ppm: dict | None) -> np.ndarray | None:
    """PPM/PPT packet headers of the tile, joined in tile-part order (A.7.4, A.7.5)."""
    if ppm is not None:
        if tile.header.ppt:
            raise InvalidSegment(f"tile {tile.index} has PPT and the main header PPM")
        chunks = [ppm[(tile.index, p.sot.TPsot)] for p in tile.parts]
        return np.frombuffer(b"".join(chunks), np.uint8)
    if tile.header.ppt:
        segs = sorted(tile.header.ppt, key=lambda s: s.Zppt)
        return np.frombuffer(b"".join(s.data for s in segs), np.uint8)
    return None


def missing_tile(index: int, num_tiles: int) -> TruncatedCodestream:
    """The error of a tile absent from the codestream (no tile-part has Isot = ``index``, A.4.2)."""
    return TruncatedCodestream(f"tile {index} is missing from the codestream ({num_tiles} tiles)")


def missing_tile_report(index: int, num_tiles: int) -> TileReport:
    """The report of a tile absent from the codestream (lenient decoding: left zero)."""
    return TileReport(index, faults=[Fault(missing_tile(index, num_tiles), index, "tile missing")])


def hdr_bytes(body: np.ndarray, headers: np.ndarray | None) -> int:
    """Bytes holding the tile's packet headers: PPM/PPT data if any, else the body."""
    return int((body if headers is None else headers).shape[0])


@dataclass
class TileSegments:
    """A tile after tier-2: tier-1's plain arrays (see ``cinegpu.decode.tier1``)."""

    coded: np.ndarray  #: uint8, every segment followed by 0xFF 0xFF
    table: np.ndarray  #: int64 (n_cb, CB_COLUMNS)
    seg_lengths: np.ndarray  #: int32
    seg_passes: np.ndarray  #: int32
    #: hints for the GPU tier-1 launch, worked out where time is cheaper (the pipeline's
    #: workers): the rows' work order and the scratch entries a slot needs (None: worked out there)
    order: np.ndarray | None = None
    entries: int | None = None


def tier2_tile(cs: Codestream, plan: TilePlan, tile: Tile, *, layers: int | None, ppm: dict | None,
               policy: Strictness, report: TileReport) -> TileSegments:
    """Read the tile's packets (B.9, B.10) and lay out its code-blocks for tier-1.

    A packet stream that breaks off (B.10) ends the tile: strict, its error is raised;
    lenient, it is recorded in ``report`` and the packets read so far are kept.
    """
    t0 = time.perf_counter()
    body = _tile_data(cs, tile)
    headers = packed_headers(cs, tile, ppm)
    # a packet takes at least one byte of header: layers beyond the bytes are never reached
    order = packet_order(plan, cs.siz, reachable=hdr_bytes(body, headers))
    report.packets_total = order.shape[0]
    n_cb = plan.cb.shape[0]
    table = plan.cb.copy()
    state = np.zeros((n_cb, 5), np.int64)
    nodes = max(plan.nodes, 1)
    big = np.int32(0x7FFFFFFF)
    incl_v, zbp_v = np.full(nodes, big, np.int32), np.full(nodes, big, np.int32)
    incl_l, zbp_l = np.zeros(nodes, np.int32), np.zeros(nodes, np.int32)
    shared = headers is None
    hdr = body if shared else headers
    max_layers = plan.layers if layers is None else min(layers, plan.layers)
    pieces, n_pieces, status, done, where = P.read_packets(
        hdr, (0, hdr.shape[0]), body, (0, body.shape[0]), shared,
        (order, plan.prec_pb, plan.pb, table, plan.cb_keep), (max_layers, plan.sop, plan.eph, not policy.strict),
        (incl_v, incl_l, zbp_v, zbp_l), state,
    )
    report.packets_read = int(done)
    if status not in (P.OK, P.ENDED):
        msg = f"tile {plan.index}, packet {done}: {T2_MESSAGES[status]}"
        offset = tile.parts[0].start + int(where) if shared else None
        cls = TruncatedCodestream if status in (P.E_HEADER_OVERRUN, P.E_BODY_OVERRUN) else InvalidSegment
        policy.fault(cls(msg, offset), report.faults, tile=plan.index, text=msg)
    coded, seg_lengths, seg_passes = P.gather_segments(body, pieces, n_pieces, table)
    report.tier2_s = time.perf_counter() - t0
    return TileSegments(coded, table, seg_lengths, seg_passes)


def check_tier1_status(status: np.ndarray, plan: TilePlan, policy: Strictness, report: TileReport,
                       num_bps: np.ndarray | None = None) -> None:
    """Turn tier-1 status bits (one per code-block) into an error (strict) or faults (lenient).

    Strict, any status but a wrong segmentation symbol raises. Lenient, more coding passes
    than a block's K bit-planes hold (``STATUS_TOO_MANY_PASSES``, T.800 D.4: decoded as
    OpenJPEG decodes them, see tier1/codeblock.py) and K < 0 (zero bit-planes past Mb, B.10.5,
    which tier-2 lets through: zeros, as OpenJPEG and Grok) are tolerated; the rest is
    concealed. A wrong segmentation symbol alone (D.5, ``STATUS_SEGSYM``) is recorded in both
    modes. ``num_bps``: the blocks' K after tier-2, to tell the zero bit-planes apart.
    """
    if not status.any():    # every block decoded cleanly: the usual case, one pass
        return
    bad = np.flatnonzero(status)
    error = InvalidSegment(
        f"tile {plan.index}: {bad.size} code-blocks fail tier-1 decoding (status {int(status[bad[0]])})"
    )
    found = status[bad]
    if policy.strict and np.any(found & ~tier1.STATUS_SEGSYM):
        raise error
    passes = (found & tier1.STATUS_TOO_MANY_PASSES) != 0
    past_mb = passes & (num_bps[bad] < 0) if num_bps is not None else np.zeros_like(passes)
    if past_mb.any():
        policy.tolerate(error, report.faults, tile=plan.index,
                        text=f"tile {plan.index}: {int(past_mb.sum())} code-blocks with more zero bit-planes "
                             "than the subband's magnitude bits (B.10.5), decoded as zeros as OpenJPEG does")
    if (passes & ~past_mb).any():
        policy.tolerate(error, report.faults, tile=plan.index,
                        text=f"tile {plan.index}: {int((passes & ~past_mb).sum())} code-blocks with more coding "
                             "passes than their bit-planes hold (D.4), decoded as OpenJPEG decodes them")
    damaged = (found & ~(tier1.STATUS_TOO_MANY_PASSES | tier1.STATUS_SEGSYM)) != 0
    segsym = (found & tier1.STATUS_SEGSYM) != 0
    if (damaged | segsym).any():
        report.faults.append(Fault(error, plan.index, f"{int((damaged | segsym).sum())} code-blocks with tier-1 faults"))
        report.concealed_blocks = int((damaged | segsym).sum())


def decode_tile(cs: Codestream, plan: TilePlan, tile: Tile | None, *, layers: int | None,
                ppm: dict | None, policy: Strictness, out: np.ndarray | None = None) -> tuple[np.ndarray, TileReport]:
    """Quantised coefficients of ``plan``'s tile (zeros where data is absent).

    ``out``: an int32 buffer of ``plan.coeff_size`` samples to write into
    (shared memory in the pipeline); every sample is written.
    """
    report = TileReport(plan.index)
    # tier-1 writes every sample of every code-block, and code-blocks tile
    # each band, so a given buffer needs clearing only for a missing tile
    coeffs = np.zeros(plan.coeff_size, np.int32) if out is None else out
    if tile is None:
        coeffs[:] = 0
        policy.fault(TruncatedCodestream(f"tile {plan.index} is missing from the codestream"), report.faults,
                     tile=plan.index, text="tile missing")
        return coeffs, report
    seg = tier2_tile(cs, plan, tile, layers=layers, ppm=ppm, policy=policy, report=report)
    t1 = time.perf_counter()
    if plan.cb.shape[0]:
        status = tier1.decode_codeblocks(seg.coded, seg.table, seg.seg_lengths, seg.seg_passes, coeffs)
        check_tier1_status(status, plan, policy, report, seg.table[:, tier1.CB_NUM_BPS])
    report.tier1_s = time.perf_counter() - t1
    return coeffs, report
