"""HTJ2K codestreams made by Grok decode as ``opj_decompress`` decodes them.

Every case encodes a synthetic image (tests/helpers/peers.py) with ``grk_compress -M 64``
(every code-block an HT block, ISO/IEC 15444-15) and one combination of options,
then decodes it with :func:`cinegpu.decode.decode` and with ``opj_decompress``
(OpenJPEG 2.5, which decodes HT cleanup, SigProp and MagRef passes). Both
reversible and irreversible streams must match exactly: the HT block decoders
produce the same coefficients and the rest of the chain is the Part-1 one the
Part-1 peer grid (test_peers.py) already pins within 1 code value.

Grok 10 writes HT streams with one quality layer (``-r``/``-q`` are ignored with
``-M 64``), no POC with HT and no subsampled raw input; layers, subsampling, ROI
and mixed HT/EBCOT blocks are covered by the conformance streams. OpenJPEG
refuses HT blocks with an ROI shift, and Grok's own decoder gets them wrong, so
the ROI case is compared with the source image instead (lossless 5/3).
"""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode import decode
from helpers.peers import Case, Image, compare, encode, have, image_planes, opj_reference, pgx_image

RGB = Image()  # 67 x 53, 3 x 8 bits (PPM)
GRAY = Image(n=1)
BIG = Image(w=131, h=97, n=1, seed=3)  # room for 7 resolutions
RGB16 = Image(n=3, bits=16, seed=4)


def _grk_ht() -> list[Case]:
    c: list[Case] = []

    def add(id, img, *args, **kw):
        c.append(Case("grk-ht-" + id, "grk", img, ("-M", "64") + tuple(args), **kw))

    # 5/3 and 9/7
    add("rev", RGB)
    add("irr", RGB, "-I", lossy=True)
    # code-block sizes, down to 4 x 4 and up to 64 x 64 (Grok's largest)
    for b in ("4,4", "8,64", "64,8", "16,32", "64,64"):
        add(f"cblk-{b.replace(',', 'x')}", RGB, "-b", b, "-n", "3")
    add("cblk-8x16-I", RGB, "-b", "8,16", "-I", lossy=True)
    # precincts, progression orders
    add("prec-RPCL", RGB, "-c", "[32,32],[16,16]", "-p", "RPCL", "-n", "4")
    add("prec-PCRL-I", RGB, "-c", "[16,16],[8,8]", "-p", "PCRL", "-n", "4", "-I", lossy=True)
    for p in ("LRCP", "RLCP", "CPRL"):
        add(f"prog-{p}", RGB, "-p", p, "-n", "4")
    # tiles with odd sizes and offsets, image offset, reduce
    add("tiles-off", RGB, "-t", "37,29", "-T", "5,3", "-d", "11,7", "-n", "3")
    add("tiles-I-reduce1", RGB, "-t", "30,22", "-I", "-n", "4", reduce=1, lossy=True)
    add("offset", GRAY, "-d", "13,29", "-n", "4")
    # resolutions and reduce
    for n in (1, 2, 7):
        add(f"res-{n}", BIG, "-n", str(n))
    add("reduce-2", BIG, "-n", "5", reduce=2)
    # MCT off, bit depths, signed
    add("mct-0-I", RGB, "-Y", "0", "-I", lossy=True)
    for bits in (4, 12):
        add(f"bits-{bits}", pgx_image(bits), "-n", "3")
    add("bits-16", Image(n=1, bits=16, seed=9), "-n", "4")
    add("bits-16-I", Image(n=1, bits=16, seed=9), "-I", lossy=True)
    add("bits-16-rgb", RGB16, "-n", "4")
    add("signed-12", pgx_image(12, signed=True), "-n", "3")
    add("signed-8-I", pgx_image(8, signed=True), "-I", lossy=True)
    # SOP/EPH, tile-parts, PLT, JP2
    add("sop-eph", RGB, "-S", "-E")
    add("tp-R", RGB, "-u", "R", "-t", "33,27", "-n", "4")
    add("plt", RGB, "-L", "-t", "40,30")
    add("jp2", RGB, "-n", "4", ext="jp2")
    # everything at once
    add("kitchen-sink", RGB, "-t", "37,29", "-T", "3,1", "-d", "5,4", "-n", "3", "-b", "16,8",
        "-c", "[16,16]", "-p", "PCRL", "-S", "-E", "-u", "R")
    return c


CASES = _grk_ht()


def test_case_count():
    assert len(CASES) == 33
    assert len({c.id for c in CASES}) == len(CASES)


def _need(*tools: str) -> None:
    for tool in tools:
        if not have(tool):
            pytest.skip(f"{tool} is not installed")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_htj2k_peer(case: Case, tmp_path):
    _need("grk_compress", "opj_decompress")
    stream = encode("grk", case.img, list(case.args), tmp_path, case.ext)
    data = stream.read_bytes()
    assert b"\xff\x50" in data[:200], "grk_compress wrote no CAP marker: not an HTJ2K stream"
    ref = opj_reference(stream, tmp_path, case.reduce, case.layers)
    got = decode(data, reduce=case.reduce, strict=True)
    problems = compare(got, ref, 0)
    assert not problems, (f"grk_compress {' '.join(case.args)} ({case.img}); reduce={case.reduce}:\n"
                          + "\n".join(problems))


def test_htj2k_roi_gives_the_image_back(tmp_path):
    _need("grk_compress")
    stream = encode("grk", RGB, ["-M", "64", "-R", "c=0,U=12", "-n", "4"], tmp_path)
    got = decode(stream.read_bytes(), strict=True)
    assert parse_rgn(stream.read_bytes())
    for g, want in zip(got, image_planes(RGB)):
        np.testing.assert_array_equal(g, want)


def parse_rgn(data: bytes) -> bool:
    from cinegpu.decode.codestream.header import parse_codestream

    cs = parse_codestream(data)
    return bool(cs.main.rgn or any(t.header.rgn for t in cs.tiles.values()))
