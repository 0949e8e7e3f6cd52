"""Packet headers and bodies (T.800 B.9, B.10; T.814 Annex B for HT blocks), in numba.

:func:`read_packets` walks a tile's packets in progression order. For each
packet it reads the header (inclusion tag tree, zero bit-planes, number of
coding passes, Lblock, segment lengths), then cuts the body into one piece
per code-block codeword segment. Pieces are what tier-1 needs later: for
code-block ``cb``, segment ``seg``, ``length`` bytes at ``offset`` in the
body buffer holding ``passes`` coding passes.

HT code-blocks (code-block style bit 0x40, ISO/IEC 15444-15) cut their passes
differently (:func:`_ht_lengths`): pass z of a block is a cleanup when
z % 3 == 0, else a SigProp or MagRef pass of the same HT set. Before the first
cleanup that holds data, leading passes are placeholders, signalled with the
cleanup in one length field as if they were one Part-1 segment (Lblock +
floor(log2(passes)) bits); a field that reads zero is widened to all the
packet's passes. After it, a cleanup has its own field of Lblock bits and the
SigProp and MagRef passes of a set share a segment (Lblock + floor(log2(n))
bits each time), joined across packets. In mixed mode (style 0xC0) a
block's first non-zero field tells it apart: HT when Lblock > 3 and the
field's top bit is 0, else an EBCOT block whose passes so far form one
segment; the block's CB_STYLE row then loses the bits of the other kind.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import tier1
from . import bits
from .tagtree import MAX_DEPTH, root_decode, tree_decode, tree_root

# status codes
OK = 0
ENDED = 1  #: data ran out at a packet boundary: remaining packets absent
E_HEADER_OVERRUN = 2  #: a packet header runs past the end of its data
E_BODY_OVERRUN = 3  #: a packet body runs past the end of the tile data
E_BITPLANES = 4  #: zero bit-planes above Mb (strict only) or a runaway tag tree
E_LBLOCK = 5  #: Lblock grew past 32 bits
E_PASSES = 6  #: more coding passes than 164 in total

#: Columns of the piece table returned by read_packets.
P_CB, P_SEG, P_OFFSET, P_LENGTH, P_PASSES = 0, 1, 2, 3, 4
MAX_PASSES = 164  # 3 * (37 + 31 + ... ) bound used by decoders; Table B.4 tops at 164

# code-block style bits of HT blocks (T.814 A.2) and the HT flag kept in cb_state[:, 4]
_HT = 0x40
_HT_MIXED = 0x80
_PLACEHOLDERS = 1  #: no cleanup with data yet: passes so far are placeholders

# The packet walk and its helpers allocate nothing and run without reference counting: numba
# would otherwise wrap every inlined bit read that takes an array in an atomic incref/decref
# pair, which cost most of a packet's time (as tier1/mq.py says for the MQ decoder).
_JIT = dict(cache=True, nogil=True, _nrt=False)


@njit(cache=True, nogil=True, inline="always")
def _num_passes(bs, data):
    """Number of new coding passes, codewords of Table B.4."""
    if not bits.read_bit(bs, data):
        return 1
    if not bits.read_bit(bs, data):
        return 2
    n = bits.read_bits(bs, data, 2)
    if n != 3:
        return 3 + n
    n = bits.read_bits(bs, data, 5)
    if n != 31:
        return 6 + n
    return 37 + bits.read_bits(bs, data, 7)


@njit(cache=True, nogil=True, inline="always")
def _max_passes(style, seg, prev_max):
    """Passes a codeword segment may hold (D.6, Table D.9; as OpenJPEG)."""
    if style & 0x04:  # TERMALL
        return 1
    if style & 0x01:  # BYPASS
        if seg == 0:
            return 10
        return 2 if (prev_max == 1 or prev_max == 10) else 1
    return 1 << 20


@njit(cache=True, nogil=True, inline="always")
def _floor_log2(n):
    k = 0
    while n > 1:
        n >>= 1
        k += 1
    return k


@njit(**_JIT)
def _emit(pieces, n_pieces, cb, seg, passes, length):
    """Record one codeword-segment length of this packet as a piece (its body offset comes
    once the header is read). Returns the new count, or -1 when ``pieces`` is full (never,
    when the caller made room as :func:`_packet_room` says)."""
    if n_pieces >= pieces.shape[0]:
        return -1
    pieces[n_pieces, P_CB] = cb
    pieces[n_pieces, P_SEG] = seg
    pieces[n_pieces, P_PASSES] = passes
    pieces[n_pieces, P_LENGTH] = length
    return n_pieces + 1


@njit(**_JIT)
def _ht_lengths(bs, hdr, st, npass, cb, cb_table, pieces, n_pieces):
    """Segment lengths of an HT (or undecided mixed) block's ``npass`` new passes (T.814 B.3).

    ``st``: the block's cb_state row, for HT blocks [included, Lblock, segments so far,
    passes so far, flags (_PLACEHOLDERS)]. Returns (n_pieces, ok); ok is False past
    MAX_PASSES (n_pieces is then -1 when ``pieces`` had no room). A mixed block found to be
    EBCOT leaves with EBCOT's state (one segment) and its style without the HT bits.
    """
    z = st[3]
    if z + npass > MAX_PASSES:
        return n_pieces, False
    lblock = st[1]
    style = cb_table[cb, tier1.CB_STYLE]
    mixed = (style & _HT_MIXED) != 0
    remaining = npass
    if st[4] & _PLACEHOLDERS:
        segp = npass - (z + npass - 1) % 3  # new passes up to their last cleanup (< 1: none)
        nbits = lblock + _floor_log2(max(segp, 1))
        length = bits.read_bits(bs, hdr, nbits)
        if segp >= 1 and length != 0 and (
                not mixed or (lblock > 3 and length > 1 and (length >> (nbits - 1)) == 0)):
            # the first cleanup with data, behind z + segp - 1 placeholder passes
            st[4] = 0
            cb_table[cb, tier1.CB_STYLE] = (style & ~_HT_MIXED) | _HT
            n_pieces = _emit(pieces, n_pieces, cb, 0, segp, length)
            if n_pieces < 0:
                return n_pieces, False
            st[2] = 1
            z += segp
            remaining -= segp
        else:
            # placeholders, or (mixed) an EBCOT block: the field covers all npass passes
            extra = _floor_log2(npass) - _floor_log2(max(segp, 1))
            length = (length << extra) | bits.read_bits(bs, hdr, extra)
            if length != 0 and mixed:
                ebcot = style & ~(_HT | _HT_MIXED)
                cb_table[cb, tier1.CB_STYLE] = ebcot
                n_pieces = _emit(pieces, n_pieces, cb, 0, npass, length)
                st[2] = 1
                st[3] = z + npass
                st[4] = _max_passes(ebcot, 0, 0)
                return n_pieces, n_pieces >= 0
            # placeholder passes; they share segment 0 with the cleanup that ends them (or,
            # mixed, with an EBCOT block's passes)
            n_pieces = _emit(pieces, n_pieces, cb, 0, npass, length)
            st[3] = z + npass
            return n_pieces, n_pieces >= 0
    while remaining > 0:
        r = z % 3
        if r == 0:  # a cleanup pass: a segment of its own
            n = 1
            seg = st[2]
            st[2] += 1
        else:  # SigProp and/or MagRef of the current set: one segment, also across packets
            n = min(3 - r, remaining)
            if r == 1:
                seg = st[2]
                st[2] += 1
            else:
                seg = st[2] - 1
        length = bits.read_bits(bs, hdr, lblock + _floor_log2(n))
        n_pieces = _emit(pieces, n_pieces, cb, seg, n, length)
        if n_pieces < 0:
            return n_pieces, False
        z += n
        remaining -= n
    st[3] = z
    return n_pieces, True


@njit(**_JIT)
def _packet_room(prec_pb, pb, p, header_bytes):
    """Pieces one packet of precinct ``p`` may add: at most MAX_PASSES per code-block of the
    precinct (a piece holds >= 1 of the <= 164 passes a packet gives a block, Table B.4), and
    at most one per 3 header bits left (a length field has >= Lblock >= 3 bits, B.10.7) plus
    one block's worth read as zero bits past the end (no later block is then included)."""
    ncb = 0
    for q in range(prec_pb[p, 0], prec_pb[p, 0] + prec_pb[p, 1]):
        ncb += pb[q, 0] * pb[q, 1]
    return min(ncb * MAX_PASSES, max(header_bytes, 0) * 8 // 3 + MAX_PASSES + 1)


# where _walk stopped (its ``at`` array): next packet, header and body positions, pieces kept,
# and the byte offset of a fault (or the pieces a packet needs room for, NEED_ROOM)
_AT_K, _AT_HPOS, _AT_BPOS, _AT_PIECES, _AT_WHERE = range(5)
_NEED_ROOM = -1  #: _walk's status when ``pieces`` must grow before packet ``at[_AT_K]``


@njit(**_JIT)
def _walk(hdr, hdr_end, body, body_end, shared, geometry, options, trees, state, pieces, at):
    """The packets of :func:`read_packets` from ``at[_AT_K]`` on, without allocating (so
    without reference counting, as tier1/mq.py): returns a status, and ``at`` says where it
    stopped. Stops with :data:`_NEED_ROOM` before a packet that ``pieces`` may lack room for.

    ``geometry``: the tile's (packets, prec_pb, pb, cb_table, cb_keep); ``options``:
    (max_layers, sop, eph, lenient); ``trees``: the tag trees' (incl_value, incl_low,
    zbp_value, zbp_low) state; ``state``: (cb_state, pb_included, bs, path), each as
    :func:`read_packets` says. ``lenient``: a code-block whose zero bit-planes exceed Mb
    (B.10.5) gets K < 0, which tier-1 decodes as zeros, as OpenJPEG and Grok do, instead of
    ending the tile (E_BITPLANES)."""
    packets, prec_pb, pb, cb_table, cb_keep = geometry
    max_layers, sop, eph, lenient = options
    incl_value, incl_low, zbp_value, zbp_low = trees
    cb_state, pb_included, bs, path = state
    hpos = at[_AT_HPOS]
    bpos = at[_AT_BPOS]
    n_pieces = at[_AT_PIECES]
    for k in range(at[_AT_K], packets.shape[0]):
        p = packets[k, 0]
        layer = packets[k, 1]
        room = _packet_room(prec_pb, pb, p, hdr_end - (bpos if shared else hpos))
        if n_pieces + room > pieces.shape[0]:
            at[_AT_K], at[_AT_HPOS], at[_AT_BPOS], at[_AT_PIECES] = k, hpos, bpos, n_pieces
            at[_AT_WHERE] = room
            return _NEED_ROOM
        at[_AT_K] = k
        if sop and bpos + 6 <= body_end and body[bpos] == 0xFF and body[bpos + 1] == 0x91:
            bpos += 6
        if shared:
            hpos = bpos
        if hpos >= hdr_end:
            at[_AT_PIECES], at[_AT_WHERE] = n_pieces, hpos
            return ENDED
        first_piece = n_pieces
        status = OK
        bits.start(bs, hpos, hdr_end)
        if bits.read_bit(bs, hdr):
            for q in range(prec_pb[p, 0], prec_pb[p, 0] + prec_pb[p, 1]):
                w = pb[q, 0]
                h = pb[q, 1]
                first = pb[q, 2]
                base = pb[q, 3]
                if w * h == 0:
                    continue
                if pb_included[q] == 0 and not root_decode(bs, hdr, incl_value, incl_low,
                                                           tree_root(base, w, h), layer + 1):
                    continue
                for leaf in range(w * h):
                    cb = first + leaf
                    st = cb_state[cb]
                    if st[0] == 0:
                        included = tree_decode(bs, hdr, incl_value, incl_low, base, w, h, leaf,
                                               layer + 1, path)
                    else:
                        included = bits.read_bit(bs, hdr) == 1
                    if not included:
                        continue
                    if st[0] == 0:
                        i = 1
                        while not tree_decode(bs, hdr, zbp_value, zbp_low, base, w, h, leaf, i, path):
                            i += 1
                            if i > 80 or bs[4]:
                                status = E_BITPLANES
                                break
                        if status != OK:
                            break
                        zbp = i - 1
                        # with ROI the encoder counts zero bit-planes from Mb + s (Annex H)
                        mb = cb_table[cb, tier1.CB_NUM_BPS] + cb_table[cb, tier1.CB_ROISHIFT]
                        if zbp > mb and not lenient:
                            status = E_BITPLANES
                            break
                        cb_table[cb, tier1.CB_NUM_BPS] = mb - zbp
                        st[0] = 1
                        pb_included[q] += 1
                        st[1] = 3
                        if cb_table[cb, tier1.CB_STYLE] & _HT:
                            st[4] = _PLACEHOLDERS
                    npass = _num_passes(bs, hdr)
                    while bits.read_bit(bs, hdr):
                        st[1] += 1
                        if st[1] > 32:
                            status = E_LBLOCK
                            break
                    if status != OK:
                        break
                    style = cb_table[cb, tier1.CB_STYLE]
                    if style & _HT:
                        n_pieces, ok = _ht_lengths(bs, hdr, st, npass, cb, cb_table, pieces, n_pieces)
                        if not ok:
                            status = E_PASSES if n_pieces >= 0 else E_HEADER_OVERRUN
                            break
                        continue
                    remaining = npass
                    while remaining > 0:
                        if st[2] == 0 or st[3] >= st[4]:
                            st[4] = _max_passes(style, st[2], st[4])
                            st[2] += 1
                            st[3] = 0
                            if st[2] > MAX_PASSES:
                                status = E_PASSES
                                break
                        n = min(st[4] - st[3], remaining)
                        length = bits.read_bits(bs, hdr, st[1] + _floor_log2(n))
                        n_pieces = _emit(pieces, n_pieces, cb, st[2] - 1, n, length)
                        if n_pieces < 0:
                            status = E_HEADER_OVERRUN
                            break
                        st[3] += n
                        remaining -= n
                    if status != OK:
                        break
                if status != OK:
                    break
        if status != OK:
            at[_AT_PIECES], at[_AT_WHERE] = first_piece, bs[0]
            return status
        if bs[4]:
            at[_AT_PIECES], at[_AT_WHERE] = first_piece, hpos
            return E_HEADER_OVERRUN
        hpos = bits.align(bs)
        if eph and hpos + 2 <= hdr_end and hdr[hpos] == 0xFF and hdr[hpos + 1] == 0x92:
            hpos += 2
        if shared:
            bpos = hpos
        # the body: one piece per segment of this packet, in header order
        for j in range(first_piece, n_pieces):
            length = pieces[j, P_LENGTH]
            if bpos + length > body_end:
                # keep what is there; the caller decides whether that is an error
                pieces[j, P_OFFSET] = bpos
                pieces[j, P_LENGTH] = max(body_end - bpos, 0)
                at[_AT_PIECES], at[_AT_WHERE] = j + 1, bpos
                return E_BODY_OVERRUN
            pieces[j, P_OFFSET] = bpos
            bpos += length
        if layer >= max_layers:
            n_pieces = first_piece  # parsed for the tag-tree state, not decoded
        else:
            # drop pieces of code-blocks whose resolution is not decoded
            m = first_piece
            for j in range(first_piece, n_pieces):
                if cb_keep[pieces[j, P_CB]]:
                    if m != j:
                        for col in range(5):
                            pieces[m, col] = pieces[j, col]
                    m += 1
            n_pieces = m
        if shared:
            hpos = bpos
    at[_AT_K], at[_AT_PIECES], at[_AT_WHERE] = packets.shape[0], n_pieces, hpos
    return OK


@njit(cache=True, nogil=True)
def read_packets(hdr, hdr_range, body, body_range, shared, geometry, options, trees, cb_state):
    """Read every packet of a tile.

    ``hdr_range``, ``body_range``: (start, end) byte offsets of the packet headers in ``hdr``
    and of the packet data in ``body``. ``shared``: headers are in the body (no PPM/PPT); then
    ``hdr`` is ``body``. ``geometry``: (packets, prec_pb, pb, cb_table, cb_keep): the packet
    order and the plan's tables (tier2/progression.py, plan.py); ``options``: (max_layers,
    sop, eph, lenient); ``trees``: (incl_value, incl_low, zbp_value, zbp_low), the tag trees'
    values and lower bounds (B.10.2), one entry per node. ``cb_state`` (n_cb, 5) holds per code-block: included flag,
    Lblock, segments so far, passes in the last segment, its maximum (HT
    blocks: passes so far and a flag instead, see :func:`_ht_lengths`); it
    starts zeroed. ``cb_table[:, CB_NUM_BPS]`` holds Mb on entry and
    receives K = Mb - zero bit-planes + ROI shift for included blocks (``lenient``: below
    zero where the zero bit-planes exceed Mb, see :func:`_walk`).

    Returns (pieces, n_pieces, status, packets read, byte offset of a fault).

    A precinct-band none of whose code-blocks is included yet costs O(1) when its inclusion
    tree's root says none is in this layer: its leaves are not visited (B.10.4; the root's
    bits are the ones the first leaf would read).

    The packets are walked by :func:`_walk`, which allocates nothing; this function owns the
    arrays and grows the piece table between packets when a packet may need more room.
    """
    pieces = np.empty((1024, 5), np.int64)
    pb = geometry[2]
    pb_included = np.zeros(pb.shape[0], np.int32)  # code-blocks of each precinct-band included so far
    bs = np.zeros(5, np.int64)
    path = np.empty(MAX_DEPTH, np.int64)  # tag-tree scratch (tree_decode)
    state = (cb_state, pb_included, bs, path)
    at = np.zeros(5, np.int64)
    at[_AT_HPOS] = hdr_range[0]
    at[_AT_BPOS] = body_range[0]
    while True:
        status = _walk(hdr, hdr_range[1], body, body_range[1], shared, geometry, options, trees, state, pieces, at)
        if status != _NEED_ROOM:
            return pieces, at[_AT_PIECES], status, at[_AT_K], at[_AT_WHERE]
        bigger = np.empty((max(pieces.shape[0] * 2, at[_AT_PIECES] + at[_AT_WHERE]), 5), np.int64)
        bigger[: at[_AT_PIECES]] = pieces[: at[_AT_PIECES]]
        pieces = bigger


#: Columns of read_frame_packets' tile rows: the tile's body and packet-header byte ranges in
#: ``body`` and ``hdr``, whether its headers are in its body (no PPM/PPT), its rows in
#: ``orders``, the layers decoded, COD's SOP and EPH flags, and lenient decoding (see _walk).
T_BODY_START, T_BODY_END, T_HDR_START, T_HDR_END, T_SHARED, T_ORDER_START, T_ORDER_END, T_MAX_LAYERS, \
    T_SOP, T_EPH, T_LENIENT = range(11)
T_COLUMNS = 11
#: Columns of read_frame_packets' result rows: status, packets read, byte offset of a fault
#: (in ``body`` or ``hdr``), pieces of the frame so far once the tile is read.
R_STATUS, R_DONE, R_WHERE, R_PIECES = range(4)


@njit(cache=True, nogil=True)
def read_frame_packets(body, hdr, tiles, orders, prec_pb, pb, cb_table, cb_keep, nodes, results):
    """:func:`read_packets` of every tile of a frame in one call, the pieces of all in one table.

    The plan tables are the frame's (each tile's rows one after another, indices counted
    from the frame's first row); ``body`` holds every tile's tile-part bodies, ``hdr`` the
    PPM/PPT packet headers of the tiles that have them (both uint8 of one kind: read-only or
    not); ``tiles`` rows as the T_* columns say, ``results`` (n, 4)
    receives each tile's R_* row. A tile whose packets break off keeps the pieces read so far
    (as :func:`read_packets`) and the next tile is read. Returns (pieces, n_pieces).
    """
    pieces = np.empty((1024, 5), np.int64)
    big = np.int32(0x7FFFFFFF)
    incl_value = np.full(max(nodes, 1), big, np.int32)
    zbp_value = np.full(max(nodes, 1), big, np.int32)
    incl_low = np.zeros(max(nodes, 1), np.int32)
    zbp_low = np.zeros(max(nodes, 1), np.int32)
    cb_state = np.zeros((cb_table.shape[0], 5), np.int64)
    pb_included = np.zeros(pb.shape[0], np.int32)
    bs = np.zeros(5, np.int64)
    path = np.empty(MAX_DEPTH, np.int64)
    trees = (incl_value, incl_low, zbp_value, zbp_low)
    state = (cb_state, pb_included, bs, path)
    at = np.zeros(5, np.int64)
    n_pieces = 0
    for t in range(tiles.shape[0]):
        packets = orders[tiles[t, T_ORDER_START] : tiles[t, T_ORDER_END]]
        at[_AT_K] = 0
        at[_AT_HPOS] = tiles[t, T_HDR_START]
        at[_AT_BPOS] = tiles[t, T_BODY_START]
        at[_AT_PIECES] = n_pieces
        at[_AT_WHERE] = 0
        while True:
            shared = tiles[t, T_SHARED] != 0
            options = (tiles[t, T_MAX_LAYERS], tiles[t, T_SOP] != 0, tiles[t, T_EPH] != 0, tiles[t, T_LENIENT] != 0)
            status = _walk(body if shared else hdr, tiles[t, T_HDR_END], body, tiles[t, T_BODY_END], shared,
                           (packets, prec_pb, pb, cb_table, cb_keep), options, trees, state, pieces, at)
            if status != _NEED_ROOM:
                break
            bigger = np.empty((max(pieces.shape[0] * 2, at[_AT_PIECES] + at[_AT_WHERE]), 5), np.int64)
            bigger[: at[_AT_PIECES]] = pieces[: at[_AT_PIECES]]
            pieces = bigger
        results[t, R_STATUS] = status
        results[t, R_DONE] = at[_AT_K]
        results[t, R_WHERE] = at[_AT_WHERE]
        results[t, R_PIECES] = at[_AT_PIECES]
        n_pieces = at[_AT_PIECES]
    return pieces, n_pieces


@njit(cache=True, nogil=True)
def gather_segments(body, pieces, n_pieces, cb_table):
    """Lay code-block segments out for tier-1 (see tier1's contract).

    Pieces of one segment are joined; every segment is followed by two 0xFF
    bytes. Fills CB_DATA, CB_SEG_FIRST and CB_SEG_COUNT of ``cb_table`` and
    returns (coded, seg_lengths, seg_passes).
    """
    n_cb = cb_table.shape[0]
    count = np.zeros(n_cb + 1, np.int64)
    for j in range(n_pieces):
        count[pieces[j, P_CB] + 1] += 1
    for i in range(n_cb):
        count[i + 1] += count[i]
    order = np.empty(n_pieces, np.int64)
    fill = count[:-1].copy()
    for j in range(n_pieces):
        cb = pieces[j, P_CB]
        order[fill[cb]] = j
        fill[cb] += 1
    # segments per code-block and bytes in all
    n_seg = 0
    n_bytes = 0
    for i in range(n_cb):
        last = -1
        for t in range(count[i], count[i + 1]):
            j = order[t]
            if pieces[j, P_SEG] != last:
                n_seg += 1
                n_bytes += 2
                last = pieces[j, P_SEG]
            n_bytes += pieces[j, P_LENGTH]
    coded = np.empty(n_bytes, np.uint8)
    seg_lengths = np.zeros(n_seg, np.int32)
    seg_passes = np.zeros(n_seg, np.int32)
    s = -1
    pos = 0
    for i in range(n_cb):
        cb_table[i, tier1.CB_DATA] = pos
        cb_table[i, tier1.CB_SEG_FIRST] = s + 1
        last = -1
        nseg = 0
        for t in range(count[i], count[i + 1]):
            j = order[t]
            if pieces[j, P_SEG] != last:
                if s >= 0 and nseg > 0:
                    coded[pos] = 0xFF
                    coded[pos + 1] = 0xFF
                    pos += 2
                s += 1
                nseg += 1
                last = pieces[j, P_SEG]
            off = pieces[j, P_OFFSET]
            length = pieces[j, P_LENGTH]
            coded[pos : pos + length] = body[off : off + length]
            pos += length
            seg_lengths[s] += length
            seg_passes[s] += pieces[j, P_PASSES]
        if nseg > 0:
            coded[pos] = 0xFF
            coded[pos + 1] = 0xFF
            pos += 2
        cb_table[i, tier1.CB_SEG_COUNT] = nseg
    return coded, seg_lengths, seg_passes
