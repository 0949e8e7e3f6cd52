"""Samples of 17 to 31 bits (T.800 A.5.1 allows up to 38), decoded as OpenJPEG decodes them.

Streams made by ``opj_compress`` from PGX images (5/3 and 9/7, signed and unsigned) decode
identical to ``opj_decompress``'s PGX output; a subband whose magnitude bit-planes do not fit
tier-1's 32-bit values (past 27 or so bits) is refused by name, never decoded into a wrong
picture; 32 bits and more are refused as OpenJPEG refuses them (tests/decode/codestream/
test_errors.py). ``cinegpu decode`` writes PGX as ``opj_decompress`` does (4-byte samples above
16 bits) and scales PNG samples to 16 bits (``opj_decompress`` refuses PNG and TIFF there). The
CUDA back end reconstructs up to 16 bits and refuses more by name.
"""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode import UnsupportedFeature, decode
from cinegpu.decode.backend import CUDA_MAX_PRECISION, Backend
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.codestream.siz import MAX_PRECISION
from cinegpu.decode.decoder import Decoder, sample_dtype
from cinegpu.media.images.write import to_file_range
from cinegpu.player.cli import main
from conftest import have_cuda
from helpers.differential import EncoderRefused, check, make_case, make_stream
from helpers.peers import Image, encode, have, opj_reference

pytestmark = [pytest.mark.skipif(not (have("opj_compress") and have("opj_decompress")),
                                 reason="opj_compress and opj_decompress are not installed"),
              # opj_compress signals more zero bit-planes than some subbands' magnitude bits at
              # these depths: tolerated (B.10.5, zeros as OpenJPEG decodes them) with a warning
              pytest.mark.filterwarnings("ignore:.*zero bit-planes than the subband:cinegpu.decode.LenientWarning")]

#: (bits, signed, irreversible) decoded in the quick pass; the slow one takes more bits and options
QUICK = [(20, False, False), (20, True, False), (20, False, True), (20, True, True)]
SLOW = [(b, s, i) for b in (17, 24, 25, 28, 31) for s in (False, True) for i in (False, True)]
OPTIONS = {"plain": ["-n", "3"], "layers": ["-n", "5", "-r", "40,10,1"],
           "tiles": ["-n", "2", "-t", "16,16", "-b", "16,16", "-p", "RPCL", "-SOP", "-EPH"]}


def made(tmp_path, bits: int, signed: bool, irreversible: bool, options: list[str]):
    img = Image(w=37, h=29, n=1, bits=bits, signed=signed, fmt="pgx", seed=bits)
    return encode("opj", img, [*options, *(["-I"] if irreversible else [])], tmp_path)


def check_against_openjpeg(tmp_path, bits, signed, irreversible, options):
    stream = made(tmp_path, bits, signed, irreversible, options)
    try:
        got = decode(stream.read_bytes())
    except UnsupportedFeature as exc:
        # only where a subband needs more magnitude bit-planes than tier-1's values hold
        assert bits > 24 and "magnitude bit-planes" in str(exc), exc
        return
    ref = opj_reference(stream, tmp_path)
    siz = parse_codestream(stream.read_bytes()).siz     # opj_compress codes a signed PGX in bits - 1
    assert siz.precision(0) == bits - signed and got[0].dtype == sample_dtype(bits - signed, signed)
    assert len(got) == len(ref) == 1
    np.testing.assert_array_equal(got[0].astype(np.int64), ref[0])


@pytest.mark.parametrize("bits,signed,irreversible", QUICK)
def test_decoded_as_openjpeg(tmp_path, bits, signed, irreversible):
    check_against_openjpeg(tmp_path, bits, signed, irreversible, OPTIONS["plain"])


@pytest.mark.slow
@pytest.mark.parametrize("options", sorted(OPTIONS))
@pytest.mark.parametrize("bits,signed,irreversible", SLOW + QUICK)
def test_decoded_as_openjpeg_more(tmp_path, bits, signed, irreversible, options):
    check_against_openjpeg(tmp_path, bits, signed, irreversible, OPTIONS[options])


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(300_000, 300_060))
def test_random_options_against_openjpeg(tmp_path, seed):
    """The differential harness's opj_compress options (layers and rates, progressions,
    code-block sizes and styles, tiles, precincts, SOP/EPH, cuts) over 17-24-bit images: ours
    agrees with OpenJPEG, or refuses a subband past tier-1's bit-planes (24-bit 9/7 streams of
    many levels, whose OpenJPEG decode is far from the source image)."""
    case = make_case(seed, ("opj",), deep=True)
    try:
        data = make_stream(case, tmp_path)
    except EncoderRefused:
        pytest.skip("opj_compress does not take these options together")
    problems = [p for p in check(case, data, tmp_path)
                if not ("ours refuses" in p and "magnitude bit-planes" in p)]
    assert not problems, f"{case}: {problems}"


def test_up_to_24_bits_decode(tmp_path):
    """Every precision up to 24 bits decodes (no subband's bit-planes exceed tier-1's there)."""
    for bits in (17, 21, 24):
        got = decode(made(tmp_path, bits, False, False, OPTIONS["plain"]).read_bytes())
        assert got[0].max() >= 1 << (bits - 1)    # the image spans the range (make_plane)


@pytest.mark.parametrize("suffix", [".pgx", ".png"])
def test_written_as_opj_decompress(tmp_path, suffix):
    stream = made(tmp_path, 20, False, False, OPTIONS["plain"])
    assert main(["decode", str(stream), "-o", str(tmp_path / f"ours{suffix}")]) == 0
    if suffix == ".pgx":    # byte for byte what opj_decompress writes
        opj_reference(stream, tmp_path)
        (theirs,) = (tmp_path / "ref").glob("out*.pgx")
        assert (tmp_path / "ours_0.pgx").read_bytes() == theirs.read_bytes()
        return
    import imagecodecs  # noqa: PLC0415  (the test's reader of PNG)

    png = imagecodecs.png_decode((tmp_path / "ours.png").read_bytes())
    assert png.dtype == np.uint16
    want = to_file_range(decode(stream.read_bytes())[0], 20, False, 16)
    np.testing.assert_array_equal(png.reshape(want.shape), want)


def test_the_cuda_back_end_limit():
    assert Backend("cuda").max_precision == CUDA_MAX_PRECISION == 16
    assert Backend("cpu").max_precision == Backend("numpy").max_precision == MAX_PRECISION == 31


def test_numpy_back_end(tmp_path):
    """The reference transforms (float64 samples above 24 bits) agree with the numba ones."""
    data = made(tmp_path, 24, True, True, OPTIONS["plain"]).read_bytes()
    np.testing.assert_array_equal(Decoder("numpy").decode(data).components[0], decode(data)[0])


@pytest.mark.gpu
@pytest.mark.skipif(not have_cuda(), reason="no CUDA device")
def test_cuda_refuses_more_than_16_bits(tmp_path):
    data = made(tmp_path, 20, False, False, OPTIONS["plain"]).read_bytes()
    with pytest.raises(UnsupportedFeature, match="20 bits; the cuda back end reconstructs up to 16"):
        Decoder("cuda").decode(data)


def _with_precisions(data: bytes, ssiz: tuple[int, ...]) -> bytes:
    """``data`` with its SIZ's Ssiz bytes (A.5.1: precision - 1, the sign in bit 7) replaced."""
    out = bytearray(data)
    for c, v in enumerate(ssiz):
        out[42 + 3 * c] = v     # after SOC, SIZ's marker, Lsiz, Rsiz, Xsiz..YTOsiz and Csiz
    return bytes(out)


@pytest.mark.parametrize("reversible", [True, False])
@pytest.mark.parametrize("ssiz", [(27, 27, 27), (0x80 | 28, 7, 7), (24, 24, 24)])
def test_the_mct_over_components_of_more_than_24_bits(tmp_path, reversible, ssiz):
    """The RCT / ICT of components of 25 to 29 bits (numpy; the compiled kernels take 24 at most)
    as OpenJPEG decodes it: identical for the RCT, within 1 for the ICT (a SIZ made to say so:
    what the tiers decode depends on QCD alone, the DC shift and the clip on SIZ). It raised a
    ValueError (found by fuzzing)."""
    from cinegpu.encode import encode
    from helpers.jp2_files import planes

    data = _with_precisions(encode(np.stack(planes([(21, 34)] * 3), -1), bits=8, backend="cpu",
                                   reversible=reversible), ssiz)
    assert parse_codestream(data).main.cod.mct
    got = decode(data)
    stream = tmp_path / "deep.j2k"
    stream.write_bytes(data)
    ref = opj_reference(stream, tmp_path)
    assert [g.shape for g in got] == [r.shape for r in ref]
    assert max(int(np.abs(g.astype(np.int64) - r).max()) for g, r in zip(got, ref)) <= (0 if reversible else 1)
