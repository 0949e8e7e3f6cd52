"""The decoder's main-header plan key (decode/decoder.py ``plan_segments``): the raw bytes of
the main header's segments that shape a plan, so that two codestreams differing in such a
segment never share a plan, and codestreams differing only elsewhere (COM, TLM) share them."""

from __future__ import annotations

import numpy as np

from cinegpu.decode.codestream import markers as M
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder, plan_segments
from cinegpu.encode import encode


def _stream() -> bytes:
    img = (np.arange(40 * 56, dtype=np.uint16).reshape(40, 56) * 7 % 256).astype(np.uint8)
    return encode(img, bits=8, backend="cpu", levels=2, reversible=True)


def _segment(data: bytes, code: int) -> tuple[int, int]:
    """(offset, length) of the main header's first ``code`` segment."""
    cs = parse_codestream(data)
    return next((o, n) for c, o, n in cs.main_markers if c == code)


def test_a_changed_step_size_gets_its_own_plan():
    a = _stream()
    o, n = _segment(a, M.QCD)
    b = bytearray(a)
    b[o + 5] += 1 << 3          # the LL band's exponent one more (SPqcd, A.6.4): another Mb
    b = bytes(b)
    dec = Decoder()
    assert dec._main_key(parse_codestream(a)) != dec._main_key(parse_codestream(b))
    dec.decode(a)
    got = dec.prepare(b).plans[0]
    fresh = Decoder().prepare(b).plans[0]
    np.testing.assert_array_equal(got.cb, fresh.cb)
    assert got is not dec.prepare(a).plans[0]
    for x, y in zip(dec.decode(b).components, Decoder().decode(b).components, strict=True):
        np.testing.assert_array_equal(x, y)


def test_a_comment_does_not_change_the_key():
    a = _stream()
    o, _ = _segment(a, M.QCD)
    com = M.COM.to_bytes(2, "big") + (2 + 2 + 5).to_bytes(2, "big") + b"\x00\x01hello"
    b = a[:o] + com + a[o:]
    cs_a, cs_b = parse_codestream(a), parse_codestream(b)
    assert plan_segments(cs_a) == plan_segments(cs_b)
    dec = Decoder()
    plan = dec.prepare(a).plans[0]
    assert dec.prepare(b).plans[0] is plan      # shared: the same coding
    for x, y in zip(dec.decode(b).components, Decoder().decode(a).components, strict=True):
        np.testing.assert_array_equal(x, y)
