"""The decoder's frames of a reel (``Decoder.prepare``, :class:`~cinegpu.decode.decoder.KnownFrame`).

A frame whose main header matched the one before (the same cached header, its TLM and COM
its own), all of whose tiles are present and whose tile-part headers shape no plan, takes the
plans of the frame before and has only its cost worked out: what it decodes to, its plans and
its cost must be what a decoder that never saw the frame before gives, errors included.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cinegpu.decode.codestream import markers as M
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.errors import LimitExceeded
from cinegpu.decode.limits import Limits, check_limits
from cinegpu.encode import encode
from helpers.codestreams import seg


def reel_frame(picture: np.ndarray, text: bytes, tile_header: bytes = b"") -> bytes:
    """``picture`` encoded, with a TLM of its tile-part lengths and a COM saying ``text`` in its
    main header (as a DCI frame carries), and ``tile_header`` in its first tile-part header."""
    data = bytes(encode(picture))
    cs = parse_codestream(data)
    parts = sorted((p.offset, t, p.sot.Psot) for t, tile in cs.tiles.items() for p in tile.parts)
    extra = seg(M.TLM, bytes([0, 0x60]) + b"".join(struct.pack(">HI", t, n + (len(tile_header) if k == 0 else 0))
                                                     for k, (_, t, n) in enumerate(parts)))
    extra += seg(M.COM, b"\x00\x01" + text)
    first = parts[0][0]
    if tile_header:     # after the first SOT segment: Psot grows by the segment's length
        psot = struct.unpack(">I", data[first + 6 : first + 10])[0] + len(tile_header)
        data = (data[:first + 6] + struct.pack(">I", psot) + data[first + 10 : first + 12] + tile_header
                + data[first + 12:])
    return data[:cs.main_end] + extra + data[cs.main_end:]


@pytest.fixture(scope="module")
def pictures():
    rng = np.random.default_rng(7)
    flat = np.full((48, 64), 90, np.uint8)
    return [rng.integers(0, 256, (48, 64), dtype=np.uint8), flat, rng.integers(0, 80, (48, 64), dtype=np.uint8)]


def fresh(data: bytes, **kw):
    return Decoder("cpu", **kw).prepare(data)


def test_a_reels_frames_take_the_plans_of_the_one_before(pictures, monkeypatch):
    frames = [reel_frame(p, b"frame %d" % k) for k, p in enumerate(pictures)]
    heads = {f[:parse_codestream(f).main_end] for f in frames}
    assert len(heads) == len(frames)        # every main header its own (TLM, COM)
    d = Decoder("cpu")
    planned = []
    plans_of = Decoder._plans_of
    monkeypatch.setattr(Decoder, "_plans_of", lambda self, *a: planned.append(1) or plans_of(self, *a))
    preps = [d.prepare(f) for f in frames]
    monkeypatch.undo()
    assert len(planned) == 1                # the first frame's plans looked up, the others' taken
    assert all(p.plans[0] is preps[0].plans[0] for p in preps[1:])
    for f, p in zip(frames, preps):
        alone = fresh(f)
        assert p.cost == alone.cost == check_limits(alone.cs, 0, Limits(), len(f),
                                                    lambda t: Decoder("cpu").geometry(alone.cs, t, 0))
        assert (p.offsets, p.size, p.ht, p.missing) == (alone.offsets, alone.size, alone.ht, alone.missing)
        assert [a.shape for a in d.decode(f).components] == [a.shape for a in Decoder("cpu").decode(f).components]
        assert all(np.array_equal(a, b) for a, b in zip(d.decode(f).components, Decoder("cpu").decode(f).components))


def test_strict_and_lenient_frames_keep_their_own_plans(pictures):
    a, b = (reel_frame(p, b"x%d" % k) for k, p in enumerate(pictures[:2]))
    d = Decoder("cpu")
    lenient, strict = d.prepare(a), d.prepare(b, strict=True)
    assert strict.strict and not lenient.strict and strict.plans[0] is not lenient.plans[0]
    assert d.prepare(b).plans[0] is lenient.plans[0] and d.prepare(a, strict=True).plans[0] is strict.plans[0]


def test_a_tile_part_header_that_shapes_the_plan_is_planned_anew(pictures):
    a = reel_frame(pictures[0], b"a")
    cs = parse_codestream(a)
    at, length = next((o, n) for c, o, n in cs.markers if c == M.COD)
    b = reel_frame(pictures[1], b"b", tile_header=a[at : at + 2 + length])   # the main COD, repeated
    d = Decoder("cpu")
    first, second = d.prepare(a), d.prepare(b)
    assert parse_codestream(b).tiles[0].header.cod is not None
    assert second.plans[0] is not first.plans[0]            # its own plan, not the reel's
    assert all(np.array_equal(x, y) for x, y in zip(d.decode(b).components, Decoder("cpu").decode(b).components))
    assert not np.array_equal(d.decode(b).components[0], d.decode(a).components[0])     # its own picture


def test_a_frame_over_the_limits_raises_as_it_would_alone(pictures):
    small, big = reel_frame(pictures[1], b"small"), reel_frame(pictures[0], b"big")
    assert len(big) > len(small)
    limit = (fresh(small).cost.memory + fresh(big).cost.memory) // 2      # between the two
    d = Decoder("cpu", max_memory=limit)
    d.prepare(small)
    with pytest.raises(LimitExceeded) as known:
        d.prepare(big)
    with pytest.raises(LimitExceeded) as alone:
        fresh(big, max_memory=limit)
    assert str(known.value) == str(alone.value)
