"""Structural edits of a codestream, as other tools' streams and damaged files come: markers
added, tile-parts dropped, repeated, swapped or cut, pointer fields changed. Each edit is
derived from ``random.Random(seed)``, so a failure names what reproduces it.

:func:`check_edit` decodes an edited stream with ``opj_decompress`` and with ours (lenient) and
says where they part, by the rules of issue 48: what OpenJPEG decodes, we decode to the same
samples (a lossy stream within 1); what it refuses, we may decode. One edit is judged apart:
an unknown marker segment whose bytes hold a word that OpenJPEG takes for a marker (it never
reads an unknown marker's length, it looks for the next marker it knows) is stepped over by
its length here, so there we must give the unedited stream's samples instead.
"""

from __future__ import annotations

import random
import struct
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from cinegpu.decode import CodestreamError, decode
from cinegpu.decode.codestream.header import parse_codestream
from helpers.differential import opj_decode

#: (name, stream) per edit; a name only where the stream lends itself to it
Edit = tuple[str, bytes]
EOC = b"\xff\xd9"


def _parts(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, header end, end) of each tile-part, in stream order."""
    cs = parse_codestream(data)
    return sorted((p.offset, p.start, p.end) for tile in cs.tiles.values() for p in tile.parts)


def _with_psot(data: bytes, at: int, psot: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(">I", out, at + 6, psot)
    return bytes(out)


def edits(data: bytes, seed: int) -> Iterator[Edit]:
    """The structural edits of ``data`` (an intact codestream that parses) for ``seed``."""
    rng = random.Random(seed)
    main_end = parse_codestream(data, main_only=True).main_end
    parts = _parts(data)
    k = rng.randrange(len(parts))
    start, head_end, end = parts[k]
    junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
    plain = junk.replace(b"\xff", b"\x00")      # no byte that could start a marker
    ends_in_eoc = data.endswith(EOC)

    def main(insert: bytes) -> bytes:
        return data[:main_end] + insert + data[main_end:]

    yield "a reserved marker and bytes in the main header", main(bytes([0xFF, 0x30 + rng.randrange(16)]) + plain)
    yield "an unknown marker segment in the main header", main(b"\xff\x7a" + struct.pack(">H", 2 + len(junk)) + junk)
    com = b"\xff\x64" + struct.pack(">H", 4 + len(junk)) + b"\x00\x01" + junk
    yield "a comment in the main header", main(com)
    psot = struct.unpack_from(">I", data, start + 6)[0]
    if psot:
        grown = data[: start + 12] + com + data[start + 12 :]
        yield "a comment in a tile-part header", _with_psot(grown, start, psot + len(com))
    yield "a short comment in the main header", main(b"\xff\x64\x00\x02")
    yield "a tile-part dropped", data[:start] + data[end:]
    yield "a tile-part repeated", data[:end] + data[start:end] + data[end:]
    if ends_in_eoc:
        yield "a tile-part repeated at the end", data[:-2] + data[start:end] + EOC
    out = bytearray(data)
    for offset, _, _ in parts:
        out[offset + 11] = 0
    yield "TNsot 0 throughout", bytes(out)
    last = parts[-1]
    if ends_in_eoc and last[2] == len(data) - 2:
        yield "Psot 0 in the last tile-part", _with_psot(data, last[0], 0)
    yield "bytes between tile-parts", data[:end] + plain + data[end:]
    if ends_in_eoc:
        yield "no EOC", data[:-2]
    yield "cut after a tile-part", data[:end]
    yield "cut in a tile-part header", data[: start + rng.randrange(2, max(3, head_end - start))]
    if len(parts) > 1:
        j = k + 1 if k + 1 < len(parts) else k - 1
        (a0, _, a1), (b0, _, b1) = sorted([parts[k], parts[j]])
        yield "two tile-parts swapped", data[:a0] + data[b0:b1] + data[a1:b0] + data[a0:a1] + data[b1:]


def _ours(data: bytes) -> list[np.ndarray] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return decode(data)
        except CodestreamError:
            return None


def _same(got: list[np.ndarray], ref: list[np.ndarray], allowed: int) -> bool:
    return len(got) == len(ref) and all(
        g.shape == r.shape and (not g.size or int(np.abs(g.astype(np.int64) - r).max()) <= allowed)
        for g, r in zip(got, ref))


def check_edit(name: str, edited: bytes, original: bytes, lossy: bool, folder: Path) -> str | None:
    """What is wrong with our decode of ``edited`` (None: nothing), against ``opj_decompress``."""
    ref = opj_decode(edited, folder)
    if ref is None:
        return None                             # OpenJPEG refuses it: ours may decode it or not
    got = _ours(edited)
    if got is None:
        return "OpenJPEG decodes it, we refuse it"
    if _same(got, ref, 1 if lossy else 0):
        return None
    if name.startswith("an unknown marker segment"):
        whole = _ours(original)
        if whole is not None and _same(got, whole, 0):
            return None                         # OpenJPEG stepped into the segment; we did not
    return "decoded to other samples than OpenJPEG's"
