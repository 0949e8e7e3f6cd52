"""The encoder's numba tier-2 (packet headers and bodies, T.800 B.9-B.10) against a
plain-Python re-statement of the clauses kept here, on real tile plans with random
code-block data and on real tier-1 output; the flat block table and the hull's sort."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode import tier1
from cinegpu.decode.tier2.progression import packet_order
from cinegpu.bench.encode import synthetic_frame
from cinegpu.encode.blocks import Block, BlockTable
from cinegpu.encode.encoder import Encoder, EncoderSettings, _as_components
from cinegpu.encode.presets import Coding, make_params
from cinegpu.encode.rate import _order_desc, _radix_order_desc, _stable_argsort, build_hull
from cinegpu.encode.tier2 import TileCoder

BYPASS, TERMALL = tier1.CBLK_BYPASS, tier1.CBLK_TERMALL


# -- the reference: T.800 B.10 read plainly ------------------------------------------------

def stuff(bits: str) -> bytes:
    """B.10.1: bits MSB first; a byte after 0xFF carries 7 bits (its MSB is a stuffed 0);
    the last byte is padded with 0 bits, and a final 0xFF is followed by 0x00."""
    out: list[int] = []
    i = 0
    while i < len(bits):
        width = 7 if out and out[-1] == 0xFF else 8
        out.append(int(bits[i:i + width].ljust(width, "0"), 2))
        i += width
    if out and out[-1] == 0xFF:
        out.append(0)
    return bytes(out)


class RefTagTree:
    """B.10.2: node (level, x, y) stands for leaves [x 2^level, (x+1) 2^level) x
    [y 2^level, (y+1) 2^level) and holds their minimum; the root is the 1x1 level."""

    def __init__(self, leaves: np.ndarray):
        self.leaves = leaves
        h, w = leaves.shape
        self.levels = 1 + max(int(np.ceil(np.log2(w))), int(np.ceil(np.log2(h))))
        self.state: dict[tuple[int, int, int], tuple[int, bool]] = {}  # bound, 1 sent

    def value(self, level: int, x: int, y: int) -> int:
        s = 1 << level
        return int(self.leaves[y * s:(y + 1) * s, x * s:(x + 1) * s].min())

    def code(self, x: int, y: int, threshold: int) -> str:
        """Bits telling whether leaf (x, y) < threshold, root first: a 0 raises a node's
        lower bound (which starts at its parent's), a 1 says the value is reached."""
        out = ""
        bound = 0
        for level in reversed(range(self.levels)):
            node = (level, x >> level, y >> level)
            known_bound, sent = self.state.get(node, (0, False))
            bound = max(bound, known_bound)
            v = self.value(*node)
            while bound < threshold and not (bound >= v and sent):
                if bound < v:
                    out += "0"
                    bound += 1
                else:
                    out += "1"
                    sent = True
            self.state[node] = (bound, sent)
        return out


def passes_codeword(n: int) -> str:
    """Table B.4."""
    if n == 1:
        return "0"
    if n == 2:
        return "10"
    if n <= 5:
        return "11" + format(n - 3, "02b")
    if n <= 36:
        return "1111" + format(n - 6, "05b")
    assert n <= 164
    return "1" * 9 + format(n - 37, "07b")


def terminated(k: int, npasses: int, style: int) -> bool:
    """Pass k ends a codeword segment (D.6, Table D.9): the last pass; every pass with
    TERMALL; with BYPASS (from pass 10 on SPP and MRP are raw, cleanup MQ) the passes
    after which the coding switches: the 10th, each cleanup after it, each raw MRP."""
    if k == npasses - 1 or style & TERMALL:
        return True
    return bool(style & BYPASS) and k >= 9 and k % 3 in (0, 2)


def segment_parts(rates, old: int, new: int, style: int) -> list[tuple[int, int]]:
    """(bytes, passes) of each codeword segment part among passes old..new-1."""
    parts, first = [], old
    for k in range(old, new):
        if k == new - 1 or terminated(k, len(rates), style):
            start = rates[first - 1] if first else 0
            parts.append((int(rates[k] - start), k - first + 1))
            first = k + 1
    return parts


def reference_packets(plan, blocks, mb, passes, order, style):
    """(precinct, header, body) of each packet in ``order``: B.10.3-B.10.7 step by step."""
    nlayers, nblocks = passes.shape
    first_layer = [next((lay for lay in range(nlayers) if passes[lay, i] > 0), nlayers)
                   for i in range(nblocks)]
    lblock = [3] * nblocks
    trees = {}
    out = []
    for prec, layer in order:
        q0, nq = plan.prec_pb[prec]
        bands = [(q, *plan.pb[q, :3]) for q in range(q0, q0 + nq) if plan.pb[q, 0] * plan.pb[q, 1]]
        old = passes[layer - 1] if layer else np.zeros(nblocks, np.int64)
        new = passes[layer]
        members = [i for _, nx, ny, first in bands for i in range(first, first + nx * ny)]
        if all(new[i] <= old[i] for i in members):
            out.append((prec, stuff("0"), b""))
            continue
        bits, body = "1", b""
        for q, nx, ny, first in bands:
            if q not in trees:
                idx = np.arange(first, first + nx * ny)
                trees[q] = (RefTagTree(np.array(first_layer)[idx].reshape(ny, nx)),
                            RefTagTree(np.array([max(mb[i] - blocks[i].num_bps, 0)
                                                 for i in idx]).reshape(ny, nx)))
            inclusion, zero_planes = trees[q]
            for y in range(ny):
                for x in range(nx):
                    i = first + y * nx + x
                    a, b = int(old[i]), int(new[i])
                    bits += inclusion.code(x, y, layer + 1) if a == 0 else "01"[b > a]
                    if b <= a:
                        continue
                    if a == 0:
                        bits += zero_planes.code(x, y, 1 << 20)
                    bits += passes_codeword(b - a)
                    parts = segment_parts(blocks[i].rates, a, b, style)
                    grow = 0
                    while any(n >= 1 << (lblock[i] + grow + int(np.log2(p))) for n, p in parts):
                        grow += 1
                    bits += "1" * grow + "0"
                    lblock[i] += grow
                    for n, p in parts:
                        bits += format(n, f"0{lblock[i] + int(np.log2(p))}b")
                    rates = blocks[i].rates
                    body += blocks[i].coded[(rates[a - 1] if a else 0):rates[b - 1]]
        out.append((prec, stuff(bits), body))
    return out


# -- inputs ------------------------------------------------------------------------------

PLANS = [  # (shape (H, W, C), encode options)
    ((37, 53, 1), {"levels": 2, "layers": 3}),
    ((64, 80, 3), {"levels": 3, "codeblock": (16, 16), "layers": 2, "progression": "RLCP"}),
    ((70, 90, 3), {"precincts": [(16, 16), (32, 32)], "progression": "CPRL", "layers": 4}),
    ((50, 70, 2), {"tiles": (32, 24), "progression": "PCRL", "layers": 2,
                   "codeblock": (4, 8)}),
    ((33, 200, 1), {"levels": 0, "codeblock": (4, 4), "layers": 5, "progression": "RPCL"}),
    ((1, 1, 1), {"layers": 2}),
]
STYLES = [0, BYPASS, TERMALL, BYPASS | TERMALL]


def _plans(shape, opts):
    h, w, c = shape
    coding = Coding(profile="generic", fps=24, bitrate=None, reversible=True, levels=opts.get("levels"),
                    codeblock=opts.get("codeblock", (32, 32)), progression=opts.get("progression", "LRCP"),
                    layers=opts.get("layers", 1), tiles=opts.get("tiles"), precincts=opts.get("precincts"),
                    style=0, quantization="expounded", guard_bits=None)
    params = make_params([(h, w)] * c, [12] * c, [False] * c, coding)
    with Encoder(EncoderSettings.of(backend="cpu")) as enc:
        cs, plans = enc._geometry(params)
    return cs, plans


def _random_blocks(rng, mb):
    """Tier-1-like blocks: K <= M_b planes, 3K - 2 passes, non-decreasing rates (some
    passes add nothing, some add thousands of bytes so Lblock grows), random bytes."""
    out = []
    for m in mb:
        k = int(rng.integers(0, min(int(m), 20) + 1))
        if rng.random() < 0.15:
            k = 0
        npasses = 3 * k - 2 if k else 0
        steps = rng.integers(0, 40, npasses) * (rng.random(npasses) < 0.8)
        steps[rng.random(npasses) < 0.05] += rng.integers(100, 5000)
        rates = np.cumsum(steps).astype(np.int32)
        coded = rng.integers(0, 256, int(rates[-1]) if npasses else 0, dtype=np.uint8)
        out.append(Block(coded.tobytes(), rates, np.ones(npasses), k))
    return out


def _random_passes(rng, blocks, layers):
    """(layers, nblocks) cumulative passes, non-decreasing over layers."""
    out = np.zeros((layers, len(blocks)), np.int64)
    for i, b in enumerate(blocks):
        top = int(rng.integers(0, b.npasses + 1)) if rng.random() < 0.8 else b.npasses
        out[:, i] = np.sort(rng.integers(0, top + 1, layers))
        out[-1, i] = top
    return out


def _random_tiles(case: int, seed: int):
    """(plan, packet order, random passes, TileCoder of random blocks, the generator) of each
    tile of PLANS[case] (style 0), from the generator seeded ``seed + case``."""
    shape, opts = PLANS[case]
    cs, plans = _plans(shape, opts)
    rng = np.random.default_rng(seed + case)
    for plan in plans:
        mb = plan.cb[:, tier1.CB_NUM_BPS].astype(np.int64)
        order = packet_order(plan, cs.siz)
        blocks = _random_blocks(rng, mb)
        passes = _random_passes(rng, blocks, plan.layers)
        yield plan, order, passes, TileCoder(plan, BlockTable.of(blocks), 0), rng


def _tier1_frame(img, **options):
    """(tier-1 Frame, base step) of a 12-bit picture coded on the CPU with 3 layers, 16 x 16
    blocks, 32 x 32 precincts, RPCL and ``options`` (the writer's input)."""
    with Encoder(EncoderSettings.of(backend="cpu", layers=3, codeblock=(16, 16), precincts=[(32, 32)],
                                    progression="RPCL", **options)) as enc:
        comps, precs, sgn = _as_components(img, 12, None)
        params = make_params([c.shape for c in comps], precs, sgn, enc.coding)
        cs, plans = enc._geometry(params)
        flats = enc._forward(comps, params, plans)
        params, cs, plans, flats = enc._guard_bits(params, cs, plans, flats)
        return enc._tier1(params, cs, plans, flats), enc.base_step


# -- tests -------------------------------------------------------------------------------

def test_reference_case_counts():
    assert len(PLANS) == 6 and len(STYLES) == 4


def test_stuffing_reference():
    assert stuff("1" * 8 + "1" * 7 + "1") == b"\xff\x7f\x80"
    assert stuff("1" * 8) == b"\xff\x00"
    assert stuff("0") == b"\x00"


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("case", range(len(PLANS)))
def test_packets_match_reference_on_random_blocks(case, style):
    shape, opts = PLANS[case]
    cs, plans = _plans(shape, opts)
    rng = np.random.default_rng(case * 10 + style)
    for plan in plans:
        mb = plan.cb[:, tier1.CB_NUM_BPS].astype(np.int64)
        order = packet_order(plan, cs.siz)
        for trial in range(3):
            blocks = _random_blocks(rng, mb)
            passes = _random_passes(rng, blocks, plan.layers)
            if trial == 2:
                passes[:] = 0  # nothing included: every packet empty
            coder = TileCoder(plan, BlockTable.of(blocks), style)
            # trial 1: the buffer is too short: the packets are measured and written again
            got = coder.packets(passes, order, capacity=1 if trial == 1 else None)
            assert coder.write(passes, order)[0].shape[0] <= coder.room(passes, len(order))
            want = reference_packets(plan, blocks, mb, passes, order, style)
            assert len(got) == len(want) == order.shape[0]
            for k, (g, w) in enumerate(zip(got, want)):
                assert g == w, (case, style, trial, k)


@pytest.mark.parametrize("style", STYLES)
def test_packets_match_reference_on_tier1_output(style):
    # real code-blocks (tier-1 of a picture) at the layers the writer chooses with no budget
    from cinegpu.encode.writer import _Writer
    frame, base_step = _tier1_frame(synthetic_frame(90, 70, seed=3), style=style)
    params = frame.params
    w = _Writer(frame, base_step)
    third = np.full(params.ncomp, len(w.hull.slope) // 3, np.int64)
    for lims in (None, third):
        passes = w.layer_passes(lims)
        assert (np.diff(passes, axis=0) >= 0).all()
        for t, (plan, coder, order) in enumerate(zip(frame.plans, w.coders, w.orders)):
            blocks = frame.tile_blocks(t)
            base = int(frame.base[t])
            sub = passes[:, base:base + len(blocks)]
            mb = plan.cb[:, tier1.CB_NUM_BPS].astype(np.int64)
            assert coder.packets(sub, order) == reference_packets(plan, blocks, mb, sub,
                                                                  order, style)


def test_block_table():
    rng = np.random.default_rng(1)
    blocks = _random_blocks(rng, rng.integers(0, 12, 40))
    table = BlockTable.of(blocks)
    passes = np.array([rng.integers(0, b.npasses + 1) for b in blocks])
    assert table.body_bytes(passes) == sum(int(b.rates[n - 1]) for b, n in zip(blocks, passes)
                                           if n)
    part = table[10:25]
    assert len(part) == 15
    for j, b in enumerate(blocks[10:25]):
        r0, r1 = part.rate_off[j], part.rate_off[j + 1]
        assert (part.rates[r0:r1] == b.rates).all()
        assert part.coded[part.coded_off[j]:part.coded_off[j + 1]].tobytes() == b.coded
    assert (table.npasses == [b.npasses for b in blocks]).all()
    assert len(BlockTable.of([])) == 0


def test_stable_argsort_matches_numpy():
    rng = np.random.default_rng(2)
    for key in (rng.random(1000), np.round(rng.random(5000), 2), np.zeros(7), np.zeros(0),
                -np.repeat(rng.random(50), 9)):
        np.testing.assert_array_equal(_stable_argsort(key), np.argsort(key, kind="stable"))


def test_radix_order_matches_numpy_stable_descending():
    """The hull's radix sort: decreasing slope, ties in index order, for positive finite
    slopes (spread over many binades, rounded into ties, one value); other keys fall back."""
    rng = np.random.default_rng(5)
    for slope in (np.exp(rng.normal(0, 20, 4000)), np.round(rng.random(5000), 2) + 0.01,
                  np.full(9, 3.5), np.array([1e-300, 1e300, 5e-324, 1.0]),
                  np.repeat(rng.random(50) + 1, 9)):
        want = np.argsort(-slope, kind="stable")
        np.testing.assert_array_equal(_radix_order_desc(slope), want)
        np.testing.assert_array_equal(_order_desc(slope), want)
    for slope in (np.zeros(0), np.array([2.0, 0.0, -1.0, 2.0]), np.array([np.inf, 1.0, np.inf])):
        np.testing.assert_array_equal(_order_desc(slope), np.argsort(-slope, kind="stable"))


def test_hull_of_ties_keeps_block_order():
    # identical blocks give equal slopes: segments stay in block order within a slope
    rates = [np.array([10, 20, 30], np.int32)] * 5
    dists = [np.array([5.0, 2.0, 1.0])] * 5
    hull = build_hull(rates, dists, np.ones(5))
    assert hull.block.tolist() == [0, 1, 2, 3, 4] * 3
    assert hull.npass.tolist() == [1] * 5 + [2] * 5 + [3] * 5


@pytest.mark.parametrize("case", range(len(PLANS)))
def test_packets_of_some_precincts_are_those_of_the_whole_tile(case):
    """Rate control's rounds write again only the precincts whose blocks changed: the
    packets of a subset of the precincts (every layer of each, in the tile's order) are
    byte for byte those the whole tile's writing gives them."""
    for plan, order, passes, coder, rng in _random_tiles(case, 40):
        whole = coder.packets(passes, order)
        nprec = len(plan.prec_pb)
        for keep in (rng.random(nprec) < 0.3, np.arange(nprec) == nprec - 1, np.ones(nprec, bool)):
            rows = np.flatnonzero(keep[order[:, 0]])
            assert coder.packets(passes, order[rows]) == [whole[k] for k in rows]


@pytest.mark.parametrize("case", range(len(PLANS)))
def test_packets_copied_into_a_buffer_at_an_offset(case):
    """TilePackets.into (how the codestream is joined): packets k0..k1-1 land at the offset
    given, byte for byte the tile's packets there, nothing around them touched."""
    for _, order, passes, coder, _ in _random_tiles(case, 70):
        tp = coder.tile_packets(passes, order)
        whole = b"".join(h + b for _, h, b in coder.packets(passes, order))
        n = len(order)
        assert tp.data().tobytes() == whole
        for k0, k1 in ((0, n), (n // 3, n - n // 4), (n - 1, n), (2, 2)):
            size = tp.size(k0, k1)
            start = len(b"".join(h + b for _, h, b in coder.packets(passes, order[:k0])))
            out = np.full(size + 9, 0xAB, np.uint8)
            assert tp.into(out, 4, k0, k1) == 4 + size
            assert out[4:4 + size].tobytes() == whole[start:start + size]
            assert (out[:4] == 0xAB).all() and (out[4 + size:] == 0xAB).all()
            if size:                # a buffer too short: refused, nothing written past it
                short = np.full(size + 8, 0xAB, np.uint8)
                with pytest.raises(AssertionError, match="measured size"):
                    tp.into(short[:size + 3], 4, k0, k1)
                assert (short[size + 3:] == 0xAB).all()


def test_measured_rounds_are_the_written_streams():
    """The writer's incremental lengths (:meth:`_Writer.measure`, packets written again only
    in precincts whose blocks changed) against a whole writing of the same passes by a fresh
    writer: total, per-component totals and bodies, over tiles, layers and tile-parts per
    component, for rounds that change many blocks, a few, one, or none."""
    from dataclasses import replace

    from cinegpu.encode.writer import _block_precincts, _Writer
    frame, base_step = _tier1_frame(synthetic_frame(150, 110, seed=8), tiles=(64, 48))
    frame.params = replace(frame.params, split_components=True)   # DCI's tile-parts
    assert len(frame.plans) == 9 and frame.params.ncomp == 3
    for plan in frame.plans:        # every block lies in the precinct whose bands list it
        prec = _block_precincts(plan)
        for p, (q0, nq) in enumerate(plan.prec_pb):
            for q in range(q0, q0 + nq):
                first, n = plan.pb[q, 2], plan.pb[q, 0] * plan.pb[q, 1]
                assert (prec[first:first + n] == p).all()
        assert (prec >= 0).all()
    w = _Writer(frame, base_step)
    nseg = len(w.hull.slope)
    rng = np.random.default_rng(9)
    lims = np.full(3, nseg // 2, np.int64)
    steps = [None, nseg // 3, 200, 5, 1, 0, 0, nseg, 3]
    for i, step in enumerate(steps * 3):
        if step is not None:
            lims = np.clip(lims + rng.integers(-step, step + 1, 3), 0, nseg)
        passes = w.layer_passes(None if step is None else lims)
        got = w.measure(passes)
        stream, total, body = _Writer(frame, base_step).write(passes)
        assert got[0] == len(stream) == len(bytes(stream)), i
        assert (got[1] == total).all() and (got[2] == body).all(), i
        if i % 4 == 0:              # and a writing after measures is the fresh one's,
            reused = w.reused       # put together from the measured packets, none written
            assert bytes(w.write(passes)[0]) == bytes(stream), i
            assert w.reused == reused + 1, i
