"""Fuzzing the decoder: reproducible mutations of whole codestreams (:func:`mutate`: bit flips,
bytes, truncation, segment lengths, Psot, SIZ fields, duplicated, removed and inserted bytes,
each derived from ``random.Random(key)`` so that a failure names what reproduces it),
:func:`fuzz` of one seed stream (nothing but CodestreamError, nothing over the time limit),
and the HT code-blocks of real streams (:func:`ht_blocks`) mutated (:func:`mutate_ht_block`) and
laid out again (:func:`ht_layout`) for tier-1's ``decode_codeblocks`` and its CUDA kernel.
"""

from __future__ import annotations

import random
import struct
import time
import traceback
from pathlib import Path

import numpy as np

from cinegpu.decode import CodestreamError, decode, tier1
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder
from conftest import SHARED

#: Seconds one mutated stream may take to decode (or fail); 4x the intact decode for large streams.
TIME_LIMIT_S = 3.0


def marker_segments(data: bytes) -> list[tuple[int, int, int]]:
    """(code, offset, length) of the marker segments of an intact stream."""
    return [m for m in parse_codestream(data).markers if m[2] > 0]


def mutate(data: bytes, key: str) -> tuple[bytes, str]:
    """One reproducible mutation of ``data`` named by ``key``; (bytes, description)."""
    rng = random.Random(key)
    segs = marker_segments(data)
    n = len(data)
    head = min(n, max(segs[-1][1] + segs[-1][2] + 2 if segs else 64, 64))  # main + first tile header
    kind = rng.choice(["flip", "flip", "flips", "byte", "byte", "truncate", "length", "length", "psot",
                       "siz", "segbyte", "segbyte", "dup", "remove", "insert"])
    b = bytearray(data)
    if kind in ("flip", "flips"):
        out = []
        for _ in range(1 if kind == "flip" else rng.randint(2, 6)):
            p = rng.randrange(head) if rng.random() < 0.6 else rng.randrange(n)
            bit = rng.randrange(8)
            b[p] ^= 1 << bit
            out.append(f"{p}:{bit}")
        return bytes(b), f"flip bits {' '.join(out)}"
    if kind == "byte":
        p = rng.randrange(head) if rng.random() < 0.6 else rng.randrange(n)
        v = rng.choice([0x00, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)])
        b[p] = v
        return bytes(b), f"byte {p} = 0x{v:02X}"
    if kind == "truncate":
        p = rng.randrange(1, n)
        return bytes(b[:p]), f"truncate at {p}"
    if kind == "length" and segs:
        code, off, length = rng.choice(segs)
        v = rng.choice([0, 1, 2, 3, length - 1, length + 1, length + 7, 0xFFFF, rng.randrange(65536)]) & 0xFFFF
        struct.pack_into(">H", b, off + 2, v)
        return bytes(b), f"length of 0x{code:04X} at {off}: {length} -> {v}"
    if kind == "psot":
        sots = [s for s in segs if s[0] == 0xFF90]
        if sots:
            code, off, _ = rng.choice(sots)
            old = struct.unpack_from(">I", b, off + 6)[0]
            v = rng.choice([0, 1, 12, 13, 14, old - 1, old + 1, old * 2, n, 0xFFFFFFFF, rng.randrange(1 << 32)])
            v &= 0xFFFFFFFF
            struct.pack_into(">I", b, off + 6, v)
            return bytes(b), f"Psot of SOT at {off}: {old} -> {v}"
    if kind == "siz":
        # Rsiz, Xsiz, Ysiz, XOsiz, YOsiz, XTsiz, YTsiz, XTOsiz, YTOsiz, Csiz, then per component
        fields = [(6, 2), (8, 4), (12, 4), (16, 4), (20, 4), (24, 4), (28, 4), (32, 4), (36, 4), (40, 2)]
        csiz = struct.unpack_from(">H", b, 40)[0]
        fields += [(42 + 3 * c + k, 1) for c in range(min(csiz, 4)) for k in range(3)]
        pos, size = rng.choice(fields)
        old = int.from_bytes(b[pos : pos + size], "big")
        top = (1 << (8 * size)) - 1
        v = rng.choice([0, 1, 2, old - 1, old + 1, old * 2, old // 2, top, top >> 1, rng.randrange(top + 1)])
        v = max(0, min(v, top))
        b[pos : pos + size] = v.to_bytes(size, "big")
        return bytes(b), f"SIZ field at {pos} ({size} bytes): {old} -> {v}"
    if kind == "segbyte" and segs:
        code, off, length = rng.choice(segs)
        p = off + 4 + rng.randrange(max(length - 2, 1))
        p = min(p, n - 1)
        v = rng.randrange(256)
        b[p] = v
        return bytes(b), f"byte {p} in segment 0x{code:04X} at {off} = 0x{v:02X}"
    if kind == "dup" and segs:
        code, off, length = rng.choice(segs)
        seg = data[off : off + 2 + length]
        return data[: off + 2 + length] + seg + data[off + 2 + length :], f"duplicate 0x{code:04X} at {off}"
    if kind == "remove" and segs:
        code, off, length = rng.choice([s for s in segs if s[1] > 2] or segs)
        return data[:off] + data[off + 2 + length :], f"remove 0x{code:04X} at {off}"
    p = rng.randrange(n)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return data[:p] + junk + data[p:], f"insert {junk.hex()} at {p}"


def check_one(data: bytes, *, strict: bool = True, limit: float = TIME_LIMIT_S, **kw) -> tuple[str | None, float]:
    """(None or what went wrong, seconds) for decoding ``data``."""
    t0 = time.perf_counter()
    try:
        if strict:
            decode(data, **kw)
        else:
            Decoder().decode(data, strict=False, **kw)
    except CodestreamError:
        pass
    except Exception as exc:  # noqa: BLE001 - anything else is the failure we look for
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return f"{type(exc).__name__}: {exc} ({Path(tb.filename).name}:{tb.lineno})", time.perf_counter() - t0
    dt = time.perf_counter() - t0
    if dt > limit:
        return f"took {dt:.1f} s (limit {limit:.1f} s)", dt
    return None, dt


def fuzz(name: str, data: bytes, count: int) -> None:
    decode(data)  # the intact stream decodes (and numba is compiled) first
    t0 = time.perf_counter()
    decode(data)
    limit = max(TIME_LIMIT_S, 4 * (time.perf_counter() - t0))  # large streams (p1_05: ~2.4 s) get 4x their own time
    failures, slowest = [], (0.0, "")
    for i in range(count):
        key = f"{name}/{i}"
        mutated, what = mutate(data, key)
        strict = i % 4 != 3  # every 4th mutation in resilient mode
        problem, dt = check_one(mutated, strict=strict, limit=limit)
        slowest = max(slowest, (dt, key))
        if problem:
            failures.append(f"{key} [{what}; strict={strict}]: {problem}")
    summary = f"{len(failures)} of {count} mutations of {name} failed (slowest {slowest[0]:.2f} s: {slowest[1]})"
    assert not failures, summary + ":\n" + "\n".join(failures[:15])


# --------------------------------------------------------------------------- HT code-blocks

HT_STREAMS = SHARED / "conformance" / "htj2k" / "codestreams"


HIFI_HT = SHARED / "conformance" / "hifi" / "codestreams" / "hifi_ht1_02.j2k"


def ht_stream_path(name: str) -> Path:
    return HIFI_HT if name == "hifi_ht1_02" else HT_STREAMS / f"{name}.j2k"


def ht_blocks(data: bytes):
    """(table rows, per-block list of (segment bytes, passes)) of every coded block of a stream."""
    d = Decoder("cpu")
    segs, _ = d.tier2(d.prepare(data))
    rows, blocks = [], []
    for s in segs:
        for row in s.table:
            first, count = int(row[tier1.CB_SEG_FIRST]), int(row[tier1.CB_SEG_COUNT])
            if count == 0 or not row[tier1.CB_WIDTH] or not row[tier1.CB_STYLE] & tier1.CBLK_HT:
                continue
            pos, pieces = int(row[tier1.CB_DATA]), []
            for j in range(first, first + count):
                n = int(s.seg_lengths[j])
                pieces.append((bytes(s.coded[pos:pos + n]), int(s.seg_passes[j])))
                pos += n + 2
            rows.append(row.copy())
            blocks.append(pieces)
    return rows, blocks


def mutate_ht_block(rng: random.Random, row: np.ndarray, pieces: list) -> tuple[np.ndarray, list]:
    row = row.copy()
    pieces = [[bytearray(b), n] for b, n in pieces]
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["byte", "byte", "flip", "cut", "grow", "passes", "bps", "scup", "swap"])
        seg = rng.choice(pieces)
        if kind in ("byte", "flip", "scup") and not seg[0]:
            kind = "grow"
        if kind == "byte":
            seg[0][rng.randrange(len(seg[0]))] = rng.choice([0x00, 0xFF, 0x7F, 0x8F, 0x90, rng.randrange(256)])
        elif kind == "flip":
            seg[0][rng.randrange(len(seg[0]))] ^= 1 << rng.randrange(8)
        elif kind == "scup":  # the 12-bit Scup field at the end of a cleanup segment
            seg[0][-1] = rng.randrange(256)
        elif kind == "cut":
            del seg[0][rng.randrange(len(seg[0]) + 1):]
        elif kind == "grow":
            seg[0] += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
        elif kind == "passes":
            seg[1] = rng.choice([0, 1, 2, 3, 4, seg[1] + 1, seg[1] + 3, rng.randrange(200)])
        elif kind == "bps":
            row[tier1.CB_NUM_BPS] = rng.choice([0, 1, 2, 30, 31, int(row[tier1.CB_NUM_BPS]) + 5])
        else:
            pieces.insert(0, pieces.pop())
    return row, [(bytes(b), n) for b, n in pieces]


def ht_layout(rows, blocks):
    coded, lengths, passes, table = bytearray(), [], [], np.array(rows)
    out_size = 0
    for b, pieces in enumerate(blocks):
        w, h = int(table[b, tier1.CB_WIDTH]), int(table[b, tier1.CB_HEIGHT])
        table[b, tier1.CB_DATA] = len(coded)
        table[b, tier1.CB_SEG_FIRST] = len(lengths)
        table[b, tier1.CB_SEG_COUNT] = len(pieces)
        table[b, tier1.CB_OUT], table[b, tier1.CB_STRIDE] = out_size, w
        out_size += w * h
        for data, n in pieces:
            coded += data + b"\xff\xff"
            lengths.append(len(data))
            passes.append(n)
    return (np.frombuffer(bytes(coded), np.uint8), table, np.array(lengths, np.int32),
            np.array(passes, np.int32), out_size)
