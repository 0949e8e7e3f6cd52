"""A decode's memory and work are bounded by its headers, its limits and its input's size.

Issue 11 item 6 (``cinegpu.decode.limits``). Each hostile stream is built from markers (the
builders of ``helpers/codestreams.py``): a SIZ of 65536 or 131072 samples a side, a ~100-byte
stream of a 15000 x 15000 empty image, 1 x 1 precincts over 2048 and 4096 sample images, 65535
quality layers. Each must raise :class:`LimitExceeded` naming the figure and the limit, before
anything large is allocated; the peak RSS and time of each are measured in a subprocess
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) under generous ceilings. Streams that are
large but legitimate, and small precincts with real data, still decode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from cinegpu.decode import LimitExceeded, UnsupportedFeature, decode
from cinegpu.decode import decoder as decoder_module
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.limits import (
    RESOLUTION_WORK,
    TILE_WORK,
    TILE_WORK_PER_BYTE,
    WORK_FREE,
    WORK_PER_BYTE,
    Limits,
    check_limits,
    check_tiles,
    memory_guard,
)
from conftest import ROOT, TESTS, present
from helpers.codestreams import SIZ_AT, cod, empty_image, one_by_one_precincts, qcd, siz, stream, tile_part
from helpers.peers import Image, encode, have, opj_reference

#: Generous guards: a refusal is milliseconds and a few MB past the imports.
TIME_GUARD_S = 20.0
RSS_GUARD_MB = 512  #: peak RSS a bounded case may add to a process that has decoded once


def test_siz_65536_refused_by_max_pixels():
    data = empty_image(65536)
    with pytest.raises(LimitExceeded, match=r"component 0 is 65536 x 65536 = 4294967296 samples, more than "
                                            r"max_pixels 134217728") as info:
        decode(data)
    assert (info.value.needed, info.value.limit) == (65536 * 65536, 1 << 27)
    assert isinstance(info.value, UnsupportedFeature)


def test_siz_131072_refused_even_without_max_pixels():
    # no pixel limit: the memory estimate (16 GiB of samples alone) refuses it before numpy is asked
    with pytest.raises(LimitExceeded, match=r"decoding needs about \d+\.\d MiB .* more than max_memory 4096\.0 MiB"):
        decode(empty_image(131072), max_pixels=None)


def test_tiny_stream_of_huge_empty_image():
    data = empty_image(15000)
    assert len(data) < 110
    with pytest.raises(LimitExceeded, match="15000 x 15000 = 225000000 samples, more than max_pixels"):
        decode(data)
    # allowed by the caller, it is still checked against memory before anything is allocated
    with pytest.raises(LimitExceeded, match=r"decoding needs about \d+\.\d MiB .*more than max_memory 256\.0 MiB"):
        decode(data, max_pixels=None, max_memory=256 << 20)


def test_reduce_brings_a_large_image_within_max_pixels():
    # max_pixels counts samples at the decoded resolution
    data = empty_image(2048, levels=2)
    with pytest.raises(LimitExceeded, match="2048 x 2048"):
        decode(data, max_pixels=1 << 20)
    out = decode(data, reduce=1, max_pixels=1 << 20)
    assert out[0].shape == (1024, 1024) and (out[0] == 128).all()


@pytest.mark.parametrize("n", [2048, 4096])
def test_one_by_one_precincts_refused_for_a_tiny_stream(n):
    data = one_by_one_precincts(n)
    t0 = time.perf_counter()
    with pytest.raises(LimitExceeded, match=rf"{n * n} precincts, {n * n} code-blocks and {n * n} packets need "
                                            rf"\d+ units of work, more than the {WORK_FREE + WORK_PER_BYTE * len(data)} "
                                            rf"allowed for {len(data)} bytes of codestream"):
        decode(data, max_memory=None)  # the work bound holds whatever the memory limit
    assert time.perf_counter() - t0 < TIME_GUARD_S
    if n == 4096:  # by default its tables (about 9.5 GiB) are refused first
        with pytest.raises(LimitExceeded, match=r"decoding needs about 99\d\d\.\d MiB"):
            decode(data)


def test_work_allowed_grows_with_the_input():
    """The same 1 x 1 precincts over 2048 x 2048 pass the work bound once the stream holds
    enough bytes of packet data (checked without decoding: the plan alone takes seconds)."""
    header_only = parse_codestream(one_by_one_precincts(2048))
    n = 2048 * 2048
    need = TILE_WORK + RESOLUTION_WORK + 3 * n + n // 32  # precincts, code-blocks, packets of one layer, 1/32 per block
    body = b"\x00" * ((need - WORK_FREE) // WORK_PER_BYTE + 1)  # empty packets, one byte each
    data = empty_image(2048, precincts=b"\x00", body=body)
    cs = parse_codestream(data)
    d = Decoder("cpu")
    cost = check_limits(cs, 0, Limits(), len(data), lambda t: d.geometry(cs, t, 0))
    assert cost.work == need <= cost.allowed_work
    assert (cost.precincts, cost.codeblocks, cost.packets) == (n, n, n)
    with pytest.raises(LimitExceeded, match="units of work"):
        check_limits(header_only, 0, Limits(), len(one_by_one_precincts(2048)),
                     lambda t: d.geometry(header_only, t, 0))


def many_tiles(w: int, h: int, layers: int = 1) -> bytes:
    """A w x h grey image in tiles of one sample, each one tile-part of ``layers`` empty packets
    (SOT, SOD and a zero byte a packet: 14 + ``layers`` bytes)."""
    tiles = b"".join(tile_part(isot=t, body=b"\x00" * layers) for t in range(w * h))
    return stream(main=cod(layers=layers) + qcd(), tiles=tiles, size=siz(w=w, h=h, tw=1, th=1))


@pytest.mark.slow
def test_65535_tiles_of_15_bytes_are_refused_before_planning(monkeypatch):
    """Issue 20: 65,535 tiles of one sample in 983 KB took 16 s to plan, read and reconstruct
    (0.25 ms a tile, 15 bytes each).  Their work is counted from the tile-parts alone and
    refused: no tile is measured or planned."""
    data = many_tiles(255, 257)
    assert 980_000 < len(data) < 990_000

    def not_here(*args):
        raise AssertionError("a tile was measured or planned")

    monkeypatch.setattr(decoder_module, "tile_geometries", not_here)
    monkeypatch.setattr(decoder_module, "build_tile_plans", not_here)
    with pytest.raises(LimitExceeded, match=rf"^65535 tiles with at least 65535 tile-component resolutions need "
                                            rf"\d+ units of work, more than the \d+ allowed for {len(data)} bytes .*"
                                            rf"tile grid of 1 x 1 samples in SIZ at byte {SIZ_AT}$") as info:
        Decoder("cpu").prepare(data)
    assert info.value.offset == SIZ_AT
    assert info.value.needed == 65535 * (TILE_WORK + RESOLUTION_WORK)
    assert info.value.limit == WORK_FREE + TILE_WORK_PER_BYTE * len(data)


@pytest.mark.slow
def test_tiles_are_paid_for_by_their_bytes():
    """7,200 one-sample tiles: too many for their bytes at 15 a tile, within the bound at 26 (12
    empty layers each), and those decode."""
    n = 80 * 90
    assert n * (TILE_WORK + RESOLUTION_WORK) > WORK_FREE    # more than any input may ask for
    lean = many_tiles(80, 90)
    with pytest.raises(LimitExceeded, match="7200 tiles with at least 7200 tile-component resolutions"):
        check_tiles(parse_codestream(lean), len(lean))
    paid = many_tiles(80, 90, layers=12)
    assert check_tiles(parse_codestream(paid), len(paid)) == n * (TILE_WORK + RESOLUTION_WORK)
    out = decode(paid)
    assert out[0].shape == (90, 80) and (out[0] == 128).all()


def test_one_by_one_precincts_of_a_small_image_decode():
    # 128 x 128 precincts and code-blocks of one sample: within the free work, and quick
    out = decode(one_by_one_precincts(128))
    assert out[0].shape == (128, 128) and (out[0] == 128).all()


def test_layers_beyond_the_data_are_not_listed():
    """65535 layers over 1024 precincts: 67 M packets if listed, but one byte of data holds
    one packet; only the layers the bytes can reach are listed (B.10.3, B.12)."""
    data = empty_image(1024, precincts=b"\x55", layers=65535)  # 32 x 32 precincts
    d = Decoder("cpu")
    frame = d.decode(data)
    assert (frame.components[0] == 128).all()
    assert frame.reports[0].packets_total == 32 * 32  # one layer reachable
    assert frame.reports[0].packets_read == 1


def test_empty_packets_of_many_layers_are_cheap():
    """A precinct of 16384 code-blocks, 4000 layers whose packets are non-empty but include
    nothing (the inclusion tree's root says no): each costs O(1), not a visit of every leaf."""
    layers = 4000
    data = empty_image(512, xcb=0, ycb=0, layers=layers, body=b"\x80" * layers)
    frame = Decoder("cpu").decode(data)
    assert frame.reports[0].packets_read == layers and not frame.damaged
    assert (frame.components[0] == 128).all()


@pytest.mark.skipif(not have("opj_compress"), reason="opj_compress is not installed")
def test_small_precincts_with_data_decode_as_openjpeg(tmp_path):
    # 8 x 8 precincts at resolution 0, 4 x 4 above (2 x 2 in each subband), 4 x 4 code-blocks,
    # two layers: many small precincts with real data (opj_compress refuses smaller ones)
    img = Image(w=61, h=45, n=3, seed=7)
    path = encode("opj", img, ["-n", "3", "-c", "[8,8],[4,4]", "-b", "4,4", "-r", "8,1"], tmp_path)
    got = decode(path.read_bytes())
    ref = opj_reference(path, tmp_path)
    for g, r in zip(got, ref, strict=True):
        assert np.array_equal(g.astype(np.int64), r)


def test_memory_error_becomes_limit_exceeded():
    @memory_guard
    def allocate():
        return np.empty(1 << 62, np.uint8)

    with pytest.raises(LimitExceeded, match="out of memory in allocate: Unable to allocate"):
        allocate()


# --- peak RSS and time of each bounded case, each in its own process -----------------------
#: case: (stream, decode's keyword arguments, whether LimitExceeded is expected)
CASES = {
    "siz-65536": ("empty_image(65536)", "", True),
    "siz-131072-no-pixel-limit": ("empty_image(131072)", "max_pixels=None", True),
    "15000-empty": ("empty_image(15000)", "", True),
    "15000-empty-no-pixel-limit": ("empty_image(15000)", "max_pixels=None, max_memory=1 << 28", True),
    "precincts-1x1-2048": ("one_by_one_precincts(2048)", "", True),
    "precincts-1x1-4096": ("one_by_one_precincts(4096)", "", True),
    "layers-65535": ("empty_image(1024, precincts=b'\\x55', layers=65535)", "", False),
}

_PROBE = textwrap.dedent("""
    import json, resource, sys, time
    sys.path.insert(0, {tests!r})
    from cinegpu.decode import CodestreamError, decode
    from helpers.codestreams import empty_image, one_by_one_precincts
    decode(empty_image(64))  # compile and load what any decode needs (a cold numba cache
    base_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # costs ~1 GB once)
    data = {build}
    t0 = time.perf_counter()
    try:
        decode(data, {kwargs})
        error = None
    except CodestreamError as exc:
        error = type(exc).__name__ + ": " + str(exc)
    seconds = time.perf_counter() - t0
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({{"error": error, "seconds": seconds, "rss_mb": rss_kib / 1024,
                      "added_mb": (rss_kib - base_kib) / 1024}}))
""")


def measure(case: str) -> dict:
    """Decode a case in a fresh process: its error, seconds in decode and the process's peak RSS (MB)."""
    build, kwargs, _ = CASES[case]
    code = _PROBE.format(tests=str(TESTS), build=build, kwargs=kwargs)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # this process's cinegpu
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


#: the cases of the quick run (one refused for its pixels, one read to its end); the others in the slow pass
QUICK_CASES = ("siz-65536", "layers-65535")


@pytest.mark.parametrize("case", [c if c in QUICK_CASES else pytest.param(c, marks=pytest.mark.slow)
                                  for c in sorted(CASES)])
def test_bounded_case_peak_rss_and_time(case):
    result = measure(case)
    print(f"{case}: {result}")
    if CASES[case][2]:
        assert result["error"] is not None and result["error"].startswith("LimitExceeded"), result
    else:
        assert result["error"] is None, result
    assert result["seconds"] < TIME_GUARD_S, result
    assert result["added_mb"] < RSS_GUARD_MB, result


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_cli_decode_limits(tmp_path):
    """``cinegpu decode`` refuses by default, names the limit, and takes --max-pixels (0: none)."""
    src = tmp_path / "wide.j2c"
    src.write_bytes(empty_image(256))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "cinegpu.player.cli", "decode", str(src), "-o",
                               str(tmp_path / "out.png"), *args], capture_output=True, text=True, timeout=120,
                              env=env)

    r = cli("--max-pixels", "1000")
    assert r.returncode == 2 and "65536 samples, more than max_pixels 1000" in r.stderr, r.stderr
    r = cli("--max-pixels", "0", "--max-memory", "0")
    assert r.returncode == 0 and (tmp_path / "out.png").exists(), r.stderr


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_ppm_is_summed_once_a_frame_not_once_a_tile(conformance, monkeypatch):
    """The limits read the main header's PPM bytes once per frame: summing its segments again
    for each tile cost tiles x segments (p1_05: 225 tiles, PPM in the main header)."""
    from cinegpu.decode import limits
    data = present(conformance / "part1" / "codestreams" / "p1_05.j2k").read_bytes()
    cs = parse_codestream(data)
    assert cs.main.ppm and len(cs.tiles) > 100
    calls = []
    real = limits.ppm_bytes
    monkeypatch.setattr(limits, "ppm_bytes", lambda c: calls.append(1) or real(c))
    Decoder("cpu").prepare(data)
    assert len(calls) == 1
    t = next(iter(cs.tiles))
    assert limits.packet_header_bytes(cs, t, 7) == limits.packet_header_bytes(cs, t) - real(cs) + 7


def test_main_header_resolutions_counted_from_cod_and_the_cocs(conformance):
    # the work bound's count of the main header's resolutions (A.6: a main COC replaces COD
    # for its component) against the per-component rule, on every Part-1 stream
    from cinegpu.decode.codestream.header import parse_codestream
    from cinegpu.decode.limits import _main_resolutions
    seen = with_coc = 0
    streams = sorted((conformance / "part1" / "codestreams").glob("*.j2k"))
    if len(streams) < 20:
        pytest.skip(f"{conformance / 'part1' / 'codestreams'} holds {len(streams)} streams, not the 20 or more here")
    for path in streams:
        cs = parse_codestream(path.read_bytes())
        want = sum(cs.spcod(None, c).levels + 1 for c in range(cs.siz.Csiz))
        assert _main_resolutions(cs) == want, path.name
        seen += 1
        with_coc += bool(cs.main.coc)
    assert seen >= 20 and with_coc >= 1
